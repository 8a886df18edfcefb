/**
 * Requests to this server, with the auth token when there is one. The token comes from `?token=` (then
 * removed from the address bar, so it does not linger in history or screenshots) or is pasted by the user;
 * it lives in sessionStorage, for this tab only.
 */

const KEY = "writeonce.token"

export const takeTokenFromUrl = () => {
  const url = new URL(location.href)
  const token = url.searchParams.get("token")
  if (token === null) return
  setToken(token)
  url.searchParams.delete("token")
  history.replaceState(null, "", url.pathname + url.search + url.hash)
}

export const getToken = (): string | undefined => sessionStorage.getItem(KEY) ?? undefined

export const setToken = (token: string) => {
  if (token.trim() === "") sessionStorage.removeItem(KEY)
  else sessionStorage.setItem(KEY, token.trim())
}

export const authHeaders = (): Record<string, string> => {
  const token = getToken()
  return token === undefined ? {} : { authorization: `Bearer ${token}` }
}

/** The server wants a (different) token. */
export class Unauthorized extends Error {}

export const getJson = async <T>(path: string): Promise<T> => {
  const res = await fetch(path, { headers: { accept: "application/json", ...authHeaders() }, cache: "no-store" })
  if (res.status === 401) throw new Unauthorized(`${path}: 401`)
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`)
  return (await res.json()) as T
}
