/**
 * Whether a listen address is this machine's only. Authentication itself (tokens, the access file, principals)
 * is src/access/'s.
 */
const LOOPBACK = /^(127(\.\d{1,3}){3}|localhost|::1|\[::1\])$/i

/** True when binding to `host` only accepts connections from this machine. */
export const isLoopback = (host: string) => LOOPBACK.test(host)
