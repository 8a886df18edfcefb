/**
 * The console page: it loads the catalog and a rows snapshot, then follows the event log from a little
 * before the snapshot, so the tail opens with recent history and the tables stay current without a reload. When
 * the app itself changes (`wo dev`), the page reloads to show the new catalog.
 */
import type { AgentsView, CatalogView, RowsSnapshot } from "../wire.ts"
import { getJson, getToken, setToken, takeTokenFromUrl, Unauthorized } from "./api.ts"
import { renderAgents } from "./agents-panel.ts"
import { renderCatalog } from "./catalog-panel.ts"
import { renderConnect } from "./connect-panel.ts"
import { byId } from "./dom.ts"
import { changesOf } from "./format.ts"
import { Projection } from "./projection.ts"
import { RowsPanel } from "./rows-panel.ts"
import { followEvents, type FollowState } from "./sse.ts"
import { TailPanel } from "./tail-panel.ts"
import { ViewsPanel } from "./views-panel.ts"

/** How many past events the tail opens with. */
const HISTORY = 30
const AGENTS_EVERY_MS = 2000

const status = byId("status")
const setStatus = (state: FollowState | "connecting" | "error", text: string) => {
  status.dataset.state = state
  status.textContent = text
}

const tokenForm = byId("token-form") as HTMLFormElement
const showTokenForm = (message: string) => {
  tokenForm.hidden = false
  byId("token-message").textContent = message
  ;(byId("token-input") as HTMLInputElement).focus()
}
byId("token-button").addEventListener("click", () => (tokenForm.hidden ? showTokenForm("") : (tokenForm.hidden = true)))
tokenForm.addEventListener("submit", (e) => {
  e.preventDefault()
  setToken((byId("token-input") as HTMLInputElement).value)
  location.reload()
})

const pollAgents = async () => {
  try {
    renderAgents(await getJson<AgentsView>("/api/_agents"))
  } catch {
    // Shown as stale until the next poll; the status pill reports the connection itself.
  }
  setTimeout(pollAgents, AGENTS_EVERY_MS)
}

/**
 * After the event stream reconnects (a restart, or `wo dev` swapping in the edited app), a changed catalog reloads
 * the page, which then renders the new types, fields, views and tools from scratch.
 */
const reloadIfCatalogChanged = async (loaded: string) => {
  try {
    if (JSON.stringify(await getJson<CatalogView>("/api/_catalog")) !== loaded) location.reload()
  } catch {
    // The next reconnect tries again.
  }
}

const start = async () => {
  takeTokenFromUrl()
  const catalog = await getJson<CatalogView>("/api/_catalog")
  document.title = `${catalog.app.name} · writeonce console`
  byId("app-name").textContent = catalog.app.name
  byId("app-description").textContent = catalog.app.description ?? ""
  byId("app-version").textContent = `v${catalog.version}`
  renderCatalog(catalog)
  renderConnect(catalog, location.origin, getToken() !== undefined)

  const snapshot = await getJson<RowsSnapshot>("/api/_rows")
  const projection = new Projection(snapshot)
  const rows = new RowsPanel(catalog, projection)
  const tail = new TailPanel()
  const views = new ViewsPanel(catalog)
  void pollAgents()

  let head = snapshot.seq
  const loaded = JSON.stringify(catalog)
  let reconnecting = false
  await followEvents(Math.max(1, snapshot.seq - HISTORY + 1), {
    onEvent: (event) => {
      // History before the snapshot goes to the tail only; the rows already include it.
      const before = event.seq > projection.at ? projection.type(event.type)?.rows.get(event.id) : undefined
      tail.add(event, changesOf(event, before))
      const applied = projection.apply(event)
      if (applied) rows.show(event.type, event.id, applied)
      head = Math.max(head, event.seq)
      views.changed()
      setStatus("live", `live · seq ${head}`)
    },
    onState: (state) => {
      if (state === "live") {
        setStatus("live", `live · seq ${head}`)
        if (reconnecting) void reloadIfCatalogChanged(loaded)
        reconnecting = false
      } else if (state === "reconnecting") {
        reconnecting = true
        setStatus("reconnecting", "reconnecting…")
      }
      else {
        setStatus("unauthorized", "token needed")
        showTokenForm("The server refused the token: paste the right one.")
      }
    }
  })
}

start().catch((e: unknown) => {
  if (e instanceof Unauthorized) {
    setStatus("unauthorized", "token needed")
    showTokenForm(getToken() === undefined ? "This server needs a token: open the page with ?token=… or paste it here." : "The server refused the token: paste the right one.")
  } else {
    setStatus("error", "error")
    console.error(e)
  }
})
