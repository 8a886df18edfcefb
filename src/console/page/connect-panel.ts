/**
 * The "connect an agent" card: copyable config for each MCP era, and the event log for other programs. The
 * URL is the one this page was opened at. A token is never written into the snippets, only a reference to
 * WO_AUTH_TOKEN, so copying (or a screenshot) does not leak it.
 */
import type { CatalogView } from "../wire.ts"
import { fill, h } from "./dom.ts"

interface Snippet {
  readonly title: string
  readonly note: string
  readonly blocks: ReadonlyArray<{ readonly label: string; readonly text: string }>
}

/** A read the reader can try at once: a `get` tool (with id 1) or a `list`, whichever the app exposes first. */
const sampleCall = (catalog: CatalogView): string | undefined => {
  for (const type of catalog.types) {
    const get = type.operations.find((o) => o.name === "get" && o.tool)
    if (get) return `await client.callTool({ name: "${get.tool}", arguments: { id: "1" } })`
    const list = type.operations.find((o) => o.name === "list" && o.tool)
    if (list) return `await client.callTool({ name: "${list.tool}", arguments: {} })`
  }
  return undefined
}

const snippets = (catalog: CatalogView, origin: string, withToken: boolean): ReadonlyArray<Snippet> => {
  const url = `${origin}/mcp`
  const name = catalog.app.name
  const resource = catalog.types.find((t) => t.resource)?.resource?.replace("{id}", "1")
  const legacyJson = JSON.stringify(
    { mcpServers: { [name]: { type: "http", url, ...(withToken ? { headers: { Authorization: "Bearer ${WO_AUTH_TOKEN}" } } : {}) } } },
    null,
    2
  )
  const transportOptions = withToken ? ", {\n  requestInit: { headers: { Authorization: `Bearer ${process.env.WO_AUTH_TOKEN}` } }\n}" : ""
  const call = sampleCall(catalog)
  const modern = [
    `import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"`,
    ``,
    `const client = new Client({ name: "my-agent", version: "1.0.0" },`,
    `  { versionNegotiation: { mode: { pin: "2026-07-28" } } })`,
    `const url = new URL("${url}")`,
    `await client.connect(new StreamableHTTPClientTransport(url${transportOptions}))`,
    ...(call ? [call] : []),
    ...(resource ? [`const sub = await client.listen({ resourceSubscriptions: ["${resource}"] })`] : [])
  ].join("\n")
  const auth = withToken ? ` -H "Authorization: Bearer $WO_AUTH_TOKEN"` : ""
  return [
    {
      title: "Legacy era",
      note: "2025-03-26 … 2025-11-25, with sessions: Claude Code, Cursor and other clients configured by mcpServers JSON.",
      blocks: [
        { label: ".mcp.json", text: legacyJson },
        { label: "or", text: `claude mcp add --transport http ${name} ${url}${withToken ? ` --header "Authorization: Bearer $WO_AUTH_TOKEN"` : ""}` }
      ]
    },
    {
      title: "Modern era",
      note: "2026-07-28, stateless, with the official SDK v2 client (@modelcontextprotocol/client).",
      blocks: [{ label: "agent.ts", text: modern }]
    },
    {
      title: "The event log",
      note: "For projections outside the server: every event from seq 1, then live, as Server-Sent Events.",
      blocks: [{ label: "shell", text: `curl -N${auth} "${origin}/api/_events?from=1"` }]
    }
  ]
}

/** Copies with the Clipboard API where the page may use it, else by selecting the text for the user. */
const copy = async (text: string, pre: HTMLElement, button: HTMLButtonElement) => {
  try {
    await navigator.clipboard.writeText(text)
    button.textContent = "Copied"
  } catch {
    getSelection()?.selectAllChildren(pre)
    button.textContent = "Selected: press Ctrl+C"
  }
  setTimeout(() => (button.textContent = "Copy"), 1500)
}

const block = ({ label, text }: { readonly label: string; readonly text: string }) => {
  const pre = h("pre", {}, text)
  const button = h("button", { type: "button", class: "ghost small" }, "Copy")
  button.addEventListener("click", () => void copy(text, pre, button))
  return h("div", { class: "snippet" }, h("div", { class: "snippet-head" }, h("span", { class: "muted" }, label), button), pre)
}

const section = (s: Snippet) => h("div", { class: "era" }, h("h3", {}, s.title), h("p", { class: "muted" }, s.note), s.blocks.map(block))

/** Two columns: the legacy era on the left; the modern era and the event log on the right. */
export const renderConnect = (catalog: CatalogView, origin: string, withToken: boolean) => {
  const [legacy, ...rest] = snippets(catalog, origin, withToken)
  fill("connect", h("div", { class: "columns" }, h("div", {}, section(legacy)), h("div", {}, rest.map(section))))
}
