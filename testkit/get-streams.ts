/**
 * A fetch for an MCP client's transport that counts the GET /mcp streams the server has answered with 200. A legacy
 * session's GET stream starts live (no Last-Event-ID on the first one), and the SDK opens it on its own after
 * `notifications/initialized`: a test that writes before the stream is open loses that notice, so it waits until
 * `opened()` says the stream is there instead of sleeping a guess. The count also shows a reconnect (a second one).
 */
export const streamWatchingFetch = () => {
  let opened = 0
  const watched = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, init)
    const method = init?.method ?? (input instanceof Request ? input.method : "GET")
    if (method === "GET" && res.status === 200 && (res.headers.get("content-type") ?? "").startsWith("text/event-stream")) opened++
    return res
  }
  return { fetch: watched, opened: () => opened }
}
