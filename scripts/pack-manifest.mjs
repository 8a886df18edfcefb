// The package.json that goes into the tarball, without the scripts (`prepack` strips them, `postpack` puts the
// file back byte for byte). They are for working on writeonce: `prepare` builds dist/ on `npm ci` in a checkout,
// and an installed package has no use for any of them, while npm 11 lists the install-time ones (`prepare`
// among them) in its install-scripts warning to everyone who installs writeonce. npm packs the package.json it
// finds on disk after `prepack`, so stripping it there is enough.
//   node scripts/pack-manifest.mjs strip     (prepack, after the build)
//   node scripts/pack-manifest.mjs restore   (postpack)
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")
const manifest = path.join(root, "package.json")
// Outside `files`, so never packed; its presence means a strip that was not restored (a failed pack).
const kept = path.join(root, ".package.json.unpacked")

const restore = () => {
  if (fs.existsSync(kept)) fs.renameSync(kept, manifest)
}

const strip = () => {
  restore() // a pack that failed before postpack left the stripped file: start from the original
  const text = fs.readFileSync(manifest, "utf8")
  const { scripts: _scripts, ...published } = JSON.parse(text)
  fs.writeFileSync(kept, text)
  // Written beside it and renamed into place: a process reading package.json meanwhile (a test spawning `wo`, which
  // imports it for its version) reads one whole file or the other.
  const next = `${manifest}.${process.pid}`
  fs.writeFileSync(next, `${JSON.stringify(published, null, 2)}\n`)
  fs.renameSync(next, manifest)
}

const step = process.argv[2]
if (step === "strip") strip()
else if (step === "restore") restore()
else {
  console.error("usage: node scripts/pack-manifest.mjs strip|restore")
  process.exit(2)
}
