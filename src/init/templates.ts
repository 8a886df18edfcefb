/**
 * The files `wo init` writes: a to-do app with one entity type and one method that runs and passes its own tests
 * as written. The transcript was recorded from this app with `wo run --record` and then given titles.
 */

export interface TemplateInput {
  /** The app's name (serverInfo, `# app:` lines). */
  readonly name: string
  /** package.json dependency specs. */
  readonly writeonce: string
  readonly effect: string
  /** devDependency specs: `wo test` typechecks with the app's own TypeScript. */
  readonly typescript: string
  readonly typesNode: string
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`

export const packageJson = ({ name, writeonce, effect, typescript, typesNode }: TemplateInput) =>
  json({
    name,
    version: "0.1.0",
    private: true,
    type: "module",
    scripts: {
      start: "wo run .",
      test: "wo test .",
      typecheck: "tsc --noEmit",
      record: "wo run . --record transcripts/recorded.http"
    },
    dependencies: { effect, writeonce },
    devDependencies: { "@types/node": typesNode, typescript }
  })

export const appTs = ({ name }: TemplateInput) => `/** The ${name} app: a to-do list. \`npx wo run .\` serves it; \`npx wo test .\` tests it. */
import { Schema } from "effect"
import { defineApp, entity, reject } from "writeonce"

export default defineApp({
  name: ${JSON.stringify(name)},
  description: "A to-do list.",
  entities: {
    tasks: entity({
      description: "Something to do.",
      fields: {
        title: Schema.String.pipe(Schema.minLength(1)),
        // The pipeable form: TypeScript infers it while it types the methods below (the data-first
        // \`Schema.optionalWith(Schema.Boolean, {...})\` inline is refused at compile time: it would not be).
        done: Schema.Boolean.pipe(Schema.optionalWith({ default: () => false }))
      },
      methods: {
        // A method is a pure decide: from the current row and its params to the change, or a refusal.
        complete: {
          description: "Mark the task as done.",
          params: {},
          apply: (task) => (task.done ? reject("already_done", "the task is already done") : { done: true })
        }
      }
    })
  }
})
`

export const specTs = () => `/**
 * Decider specs for tasks: given the events a task already has, when a command arrives, then the events it
 * decides, or the error. No server and no I/O: \`npx wo test .\` runs them, with the transcripts.
 */
import { create, created, DeciderSpecification, invoke, invoked, spec } from "writeonce/testing"
import app from "../app.ts"

const given = DeciderSpecification.for(app, "tasks")

spec("a new task is open", () =>
  given([])
    .when(create({ title: "Write the README" }))
    .then([created({ title: "Write the README", done: false })]))

spec("an open task can be completed", () =>
  given([created({ title: "Write the README", done: false })])
    .when(invoke("complete"))
    .then([invoked("complete", { done: true })]))

spec("a done task cannot be completed again", () =>
  given([created({ title: "Write the README", done: false }), invoked("complete", { done: true })])
    .when(invoke("complete"))
    .thenRejects("already_done", "already done"))

spec("a task needs a title", () =>
  given([])
    .when(create({ title: "" }))
    .thenFails("ValidationFailed"))
`

export const transcriptHttp = ({ name }: TemplateInput) => `# app: ${name}
# A task's life over REST: create it, complete it, fail to complete it twice, list it. Recorded with
# \`npx wo run . --record\`, then given titles; \`"...": "*"\` lets the list page carry more keys (a cursor).
# The format is described in writeonce's docs/transcripts.md.

### create a task
POST /api/tasks
content-type: application/json

{
  "title": "Write the README"
}

--> 201
content-type: application/json
location: /api/tasks/{{tasks_1}}
etag: "1"

{
  "id": "{{tasks_1}}",
  "version": 1,
  "title": "Write the README",
  "done": false
}

### complete it
POST /api/tasks/{{tasks_1}}/complete
content-type: application/json

{}

--> 200
content-type: application/json
etag: "2"

{
  "id": "{{tasks_1}}",
  "version": 2,
  "title": "Write the README",
  "done": true
}

### completing it again is refused
POST /api/tasks/{{tasks_1}}/complete
content-type: application/json

{}

--> 422
content-type: application/json

{
  "error": "Rejected",
  "message": "the task is already done",
  "code": "already_done"
}

### the list shows it done
GET /api/tasks

--> 200
content-type: application/json

{
  "items": [
    {
      "id": "{{tasks_1}}",
      "version": 2,
      "title": "Write the README",
      "done": true
    }
  ],
  "...": "*"
}
`

export const readme = ({ name }: TemplateInput) => `# ${name}

A [writeonce](https://www.npmjs.com/package/writeonce) app: \`app.ts\` declares the entity types in Effect Schema,
and writeonce serves them as a REST API at \`/api\` and an MCP server at \`/mcp\`, over a durable event log.

\`\`\`sh
npm install
npx wo run .       # serve on http://127.0.0.1:8080 (data in .data/)
npx wo dev .       # the same, reloaded live on every save (agents are told the tools changed)
npx wo test .      # run the decider specs and replay the transcripts
\`\`\`

Try it:

\`\`\`sh
curl -s -XPOST localhost:8080/api/tasks -H 'content-type: application/json' -d '{"title":"Write the README"}'
curl -s -XPOST localhost:8080/api/tasks/1/complete -H 'content-type: application/json' -d '{}'
curl -s localhost:8080/api/tasks
\`\`\`

- \`app.ts\`: the app. A method such as \`complete\` is a pure decision over the current row.
- \`specs/*.spec.ts\`: decider specs: given events, when a command, then events or an error (no I/O).
- \`transcripts/*.http\`: recorded HTTP sessions, replayed against a fresh server by \`wo test\`. Record a new one with
  \`npx wo run . --record transcripts/new.http\`, use the app, stop the server, then trim the file.

\`wo test\` first typechecks \`app.ts\` and the specs with this app's TypeScript (\`--no-typecheck\` skips it; \`npm run
typecheck\` runs \`tsc\` alone), then prints TAP and exits non-zero on any failure; \`--junit report.xml\` also writes
JUnit XML for CI.
`

export const gitignore = () => `node_modules/
.data/
`

export const tsconfig = () =>
  json({
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      strict: true,
      noEmit: true,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      types: ["node"]
    }
  })
