/** The package version, shown in serverInfo and `wo --version`. */
import pkg from "../../package.json" with { type: "json" }

export const VERSION: string = pkg.version
