/**
 * The ticket desk embedded in an Effect program: the runtime as a Layer, the app's typed API in the program, and
 * one route of the program's own on the server's port.
 *
 *   node --conditions=writeonce-source --import tsx examples/embedded/main.ts [DATA_DIR] [HOST:PORT]
 *
 * (From an installed package: `npx tsx main.ts`.) It serves the app's REST API and MCP server as `wo run` does,
 * and `POST /desk/escalations` `{"ticket": "1", "agent": "2"}`: the `escalate` command, answered with the
 * ticket and who escalated it, a refusal as 404 or 422 with its code.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Schema, Stream } from "effect"
import { Caller, loadSettings, may, Op, WriteOnce, writeOnceLayer, type WriteOnceApi } from "writeonce"
import desk from "./app.ts"

const Escalation = Schema.Struct({ ticket: Schema.String, agent: Schema.String })

/** The program's route: it reads the caller's principal (set when the server requires a credential). */
const routes = (wo: WriteOnceApi<typeof desk>) =>
  HttpRouter.empty.pipe(
    HttpRouter.post(
      "/desk/escalations",
      Effect.gen(function* () {
        const { principal } = yield* Caller
        // Any authenticated principal reaches a custom route; this one asks for the command's own grant.
        if (!may(principal, Op.command("escalate"))) return yield* HttpServerResponse.json({ error: "Forbidden" }, { status: 403 })
        const { ticket, agent } = yield* HttpServerRequest.schemaBodyJson(Escalation)
        const api = principal === undefined ? wo : wo.as(principal)
        const done = yield* api.command("escalate", { ticket, agent })
        const escalated = done.changes[0].row
        return yield* HttpServerResponse.json({ ticket: escalated, escalatedBy: principal?.name ?? null })
      }).pipe(
        Effect.catchTags({
          NotFound: (e) => HttpServerResponse.json({ error: e._tag, message: e.message }, { status: 404 }),
          Rejected: (e) => HttpServerResponse.json({ error: e._tag, code: e.code, message: e.message }, { status: 422 }),
          ValidationFailed: (e) => HttpServerResponse.json({ error: e._tag, message: e.message }, { status: 400 }),
          ParseError: (e) => HttpServerResponse.json({ error: "ValidationFailed", message: e.message }, { status: 400 })
        })
      )
    )
  )

/** The program: a desk with two agents and a ticket on first start, and a line logged at each change of the counts. */
const program = Effect.gen(function* () {
  const wo = yield* WriteOnce.of(desk)
  const { items } = yield* wo.list("agents", { limit: 1 })
  if (items.length === 0) {
    const ann = yield* wo.create("agents", { name: "Ann" })
    yield* wo.create("agents", { name: "Bob" })
    const ticket = yield* wo.create("tickets", { title: "The printer is on fire" })
    yield* wo.invoke("tickets", ticket.id, "assign", { agent: ann.id })
    // The server's own refusal, as a tagged error: there is no agent 99.
    yield* wo.command("escalate", { ticket: ticket.id, agent: "99" }).pipe(
      Effect.catchTag("Rejected", (e) => Effect.logInfo(`escalate refused: ${e.code}`))
    )
  }
  const open = yield* wo.list("tickets", { where: { status: "open" }, order: "-id" })
  yield* Effect.logInfo(`open tickets: ${open.items.length}`)
  yield* wo.changes.view("tickets_by_status").pipe(
    Stream.runForEach(({ value }) => Effect.logInfo(`tickets: ${value.open} open, ${value.assigned} assigned, ${value.closed} closed`))
  )
})

const [dataDir = "examples/embedded/.data", listen = "127.0.0.1:8093"] = process.argv.slice(2)
const settings = await Effect.runPromise(loadSettings({ dataDir, listen }))

program.pipe(Effect.provide(writeOnceLayer(desk, settings, { routes })), NodeRuntime.runMain)
