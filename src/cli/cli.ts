/**
 * The `wo` command line: `wo run <app-dir>` serves an app (`wo dev <app-dir>` reloads it live), `wo replay [--app <app-dir>] <data-dir>` proves the
 * projection can be rebuilt from the log, `wo verify <data-dir>` checks the store (neither writes the data dir),
 * `wo repair-current <data-dir>` brings back a lost CURRENT; `wo init <dir>` starts an app and `wo test <app-dir>`
 * tests one (src/init, src/testing). A thin shell over `writeOnceLayer`.
 *
 * Exit codes: 0 done, 1 the command failed (one `wo: ...` line), 2 the command line was wrong (one line naming what).
 */
import { Args, Command, Options, ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Console, Context, Effect, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeClassicLevelLog } from "../log/classic-level/classic-level-log.ts"
import { openReadOnly } from "../log/classic-level/offline/read-only-db.ts"
import { planCurrentRepair, writeCurrent } from "../log/classic-level/offline/repair-current.ts"
import { verifyStore } from "../log/classic-level/offline/verify.ts"
import { compareKeyedViews } from "../projections/views/keyed-check.ts"
import { restoreBackup, takeBackup } from "../backup/take-backup.ts"
import { EventLog, type EventLogShape } from "../log/event-log.ts"
import { PgConnection, pgConnectionLayer } from "../log/postgres/connection.ts"
import { postgresLogLayer } from "../log/postgres/postgres-log.ts"
import { verifyPostgresStore } from "../log/postgres/verify.ts"
import { loadApp } from "../app-loading/load-app.ts"
import { fatal, runCommand, UsageError } from "./command-line.ts"
import { printTopHelp, wantsTopHelp } from "./top-help.ts"
import { devApp, runApp } from "./serve.ts"
import { replay } from "../projections/replay.ts"
import { upcastingLog } from "../log/upcasting-log.ts"
import { compileApp } from "../domain/compile.ts"
import { referenceFieldsOf } from "../log/reference-audit.ts"
import { VERSION } from "../support/version.ts"
import { isStoreError, StoreFailed } from "../domain/errors.ts"
import { nextSteps, scaffoldApp, TEMPLATES } from "../init/scaffold.ts"
import { testApp } from "../testing/app-tests.ts"
import { junitXml, tapHeader, tapResult, tapSummary } from "../testing/reporters.ts"

const appDir = Args.directory({ name: "app-dir", exists: "yes" }).pipe(
  Args.withDescription("the app folder, holding app.ts")
)
// Plain text, not Options.directory: the store's open names what is wrong with the path in one line.
const dataOption = Options.text("data").pipe(
  Options.withDescription("data directory (default: <app-dir>/.data, or WO_DATA); its rows are served from disk through a cache of WO_ROW_CACHE bytes (default 64 MiB)"),
  Options.optional
)
const listenOption = Options.text("listen").pipe(
  Options.withDescription("HOST:PORT to listen on (default: 127.0.0.1:8080, or WO_LISTEN)"),
  Options.optional
)

const recordOption = Options.file("record").pipe(
  Options.withDescription("append every HTTP exchange to this transcript file, for an app's transcripts/ (or WO_RECORD)"),
  Options.optional
)
const insecureOption = Options.boolean("insecure").pipe(
  Options.withDescription("allow a non-loopback --listen address without WO_AUTH_TOKEN or an access file")
)
const accessOption = Options.file("access").pipe(
  Options.withDescription("the access file: principals, their tokens and grants (or WO_ACCESS_FILE); re-read on SIGHUP and when it changes"),
  Options.optional
)
const storeOption = Options.text("store").pipe(
  Options.withDescription("the event store: postgres://user@host:port[,host:port...]/db (default: the embedded store in the data dir, or WO_STORE); WO_STORE_TIMEOUT (default 5s) bounds each wait for its primary; each node stores its views every WO_VIEW_SNAPSHOT_EVERY events (default 10000)"),
  Options.optional
)
const acceptDataLossOption = Options.boolean("accept-data-loss").pipe(
  Options.withDescription("open the data dir although LevelDB dropped data while opening it (or WO_ACCEPT_DATA_LOSS=1)")
)

const run = Command.make(
  "run",
  { appDir, data: dataOption, listen: listenOption, insecure: insecureOption, acceptDataLoss: acceptDataLossOption, record: recordOption, store: storeOption, access: accessOption },
  ({ appDir, data, listen, insecure, acceptDataLoss, record, store, access }) =>
    runApp({
      appDir,
      data: Option.getOrUndefined(data),
      listen: Option.getOrUndefined(listen),
      insecure,
      access: Option.getOrUndefined(access),
      acceptDataLoss,
      record: Option.getOrUndefined(record),
      store: Option.getOrUndefined(store)
    })
).pipe(Command.withDescription("serve an app: REST at /api, MCP at /mcp"))

const dev = Command.make(
  "dev",
  { appDir, data: dataOption, listen: listenOption, insecure: insecureOption, access: accessOption },
  ({ appDir, data, listen, insecure, access }) => devApp({ appDir, data: Option.getOrUndefined(data), listen: Option.getOrUndefined(listen), insecure, access: Option.getOrUndefined(access) })
).pipe(Command.withDescription("serve an app like run, and reload it live on every change of its folder (tools and resource lists announced to MCP clients)"))

const replayAppOption = Options.directory("app", { exists: "yes" }).pipe(
  Options.withDescription("the app folder (app.ts): compare after its migrations and defaults; needed once the schema changed"),
  Options.optional
)

const verifyAppOption = Options.directory("app", { exists: "yes" }).pipe(
  Options.withDescription("the app folder (app.ts): also check that every row's ref fields name live rows"),
  Options.optional
)

/** The store a maintenance command reads: `--store` (or WO_STORE) if given, else the data dir. */
const chooseStore = (dataDir: Option.Option<string>, store: Option.Option<string>) =>
  Effect.gen(function* () {
    const url = Option.isSome(store) ? store.value : process.env.WO_STORE !== undefined && process.env.WO_STORE !== "" ? process.env.WO_STORE : undefined
    if (url !== undefined) return { url } as const
    if (Option.isNone(dataDir)) return yield* new UsageError({ message: "name a data dir, or a PostgreSQL store with --store (or WO_STORE)" })
    return { dataDir: dataDir.value } as const
  })

const replayCommand = Command.make(
  "replay",
  {
    app: replayAppOption,
    store: storeOption,
    dataDir: Args.text({ name: "data-dir" }).pipe(Args.withDescription("the data directory to check (or --store)"), Args.optional)
  },
  ({ app, store, dataDir: dir }) =>
    Effect.gen(function* () {
      const catalog = Option.isSome(app) ? yield* Effect.flatMap(loadApp(app.value), ({ app }) => compileApp(app)) : undefined
      const chosen = yield* chooseStore(dir, store)
      const dataDir = chosen.url ?? chosen.dataDir
      // On PostgreSQL, run it while no node writes: rows stored after the log was read would differ from its fold.
      const stored: EventLogShape = chosen.url !== undefined
        ? Context.get(yield* Layer.build(postgresLogLayer(chosen.url)), EventLog)
        : yield* Effect.flatMap(openReadOnly(path.resolve(chosen.dataDir)), makeClassicLevelLog)
      const log = catalog === undefined ? stored : upcastingLog(stored, catalog)
      const report = yield* replay(log, catalog)
      yield* Console.log(
        `replayed ${report.events} events into ${report.rows} rows in ${report.millis} ms` +
          (catalog === undefined ? "" : ` (after the app's migrations and defaults)`) +
          `\nrebuilt digest ${report.rebuiltDigest}\nstored  digest ${report.storedDigest} (${report.storedRows} rows)`
      )
      if (report.needsApp !== undefined) {
        return yield* fatal(
          `cannot compare without the app: ${report.needsApp}. Run wo replay --app <app-dir> ${dataDir} to compare after its migrations and defaults`
        )
      }
      for (const misfit of report.misfits) yield* Console.error(`DOES NOT FIT: ${misfit}`)
      for (const v of report.views) {
        if (v.outcome === "mismatch") {
          yield* Console.error(`MISMATCH: view ${v.name}: ${v.detail}`)
          for (const line of v.keys ?? []) yield* Console.error(`MISMATCH: view ${v.name} ${line}`)
        }
        else yield* Console.log(`view ${v.name}: ${v.outcome === "match" ? "equals the log's fold" : "stale"}: ${v.detail}`)
      }
      if (catalog === undefined && (yield* log.storedViews ?? Effect.succeed([])).length > 0) {
        yield* Console.log("views: not compared (their evolve is the app's code): run wo replay --app <app-dir> to fold and compare them")
      }
      if (!report.matches) {
        if (report.mismatches.length > 0) yield* Console.error(`MISMATCH: the stored rows differ from the log: ${report.mismatches.join(", ")}`)
        return yield* Effect.sync(() => process.exit(1))
      }
      yield* Console.log(`OK: the stored rows equal the log's fold${report.views.length > 0 ? `, and so do the views` : ""}`)
    }).pipe(Effect.scoped)
).pipe(Command.withDescription("rebuild the rows (and, with --app, the views) from the log and compare them with the stored ones"))

const verifyCommand = Command.make(
  "verify",
  {
    dataDir: Args.text({ name: "data-dir" }).pipe(
      Args.withDescription("the data directory to check (the server must be stopped; it is never written), or --store"),
      Args.optional
    ),
    store: storeOption,
    acceptDataLoss: acceptDataLossOption,
    app: verifyAppOption
  },
  ({ dataDir, store, acceptDataLoss, app }) =>
    Effect.gen(function* () {
      // The store does not know which fields are references: the app says, when given.
      const catalog = Option.isSome(app) ? yield* Effect.flatMap(loadApp(app.value), ({ app }) => compileApp(app)) : undefined
      const references = catalog === undefined ? undefined : referenceFieldsOf(catalog)
      const chosen = yield* chooseStore(dataDir, store)
      // A PostgreSQL store is checked in one snapshot: its nodes may go on writing.
      const opened = chosen.url !== undefined ? undefined : yield* openReadOnly(path.resolve(chosen.dataDir), { acceptDataLoss })
      const checked = opened === undefined
        ? yield* verifyPostgresStore(Context.get(yield* Layer.build(pgConnectionLayer(chosen.url!)), PgConnection), references)
        : yield* verifyStore(opened, references)
      // With the app, keyed views' entries are folded from the log and compared key by key (keyed-check.ts).
      // On PostgreSQL, the entries the last snapshot stored are compared with a fold of the log up to its seq.
      const keyed = catalog === undefined
        ? []
        : yield* compareKeyedViews(upcastingLog(opened === undefined ? Context.get(yield* Layer.build(postgresLogLayer(chosen.url!)), EventLog) : yield* makeClassicLevelLog(opened), catalog), catalog)
      const keyedProblems = keyed.flatMap((v) => v.outcome === "mismatch" ? [`view ${v.name}: ${v.detail}`, ...(v.keys ?? []).map((line) => `view ${v.name} ${line}`)] : [])
      const report = keyedProblems.length === 0 ? checked : { ...checked, problems: [...checked.problems, ...keyedProblems] }
      const rate = Math.round(report.events / Math.max(0.001, report.millis / 1000))
      yield* Console.log(`verified ${report.events} events and ${report.rows} rows in ${report.millis} ms (${rate} events/s)`)
      for (const note of report.accepted) yield* Console.log(note)
      if (report.problems.length > 0) {
        yield* Console.error(
          `PROBLEMS (${report.problems.length + report.unlisted}):\n  - ${report.problems.join("\n  - ")}` +
            (report.unlisted > 0 ? `\n  ... and ${report.unlisted} more` : "")
        )
        return yield* Effect.sync(() => process.exit(1))
      }
      yield* Console.log(
        "OK: checksums, sequence and version continuity, counters, row counts, checkpoint and view records" +
          (references === undefined ? " (references not checked: run wo verify --app <app-dir> to check them)" : ", and references")
      )
    }).pipe(Effect.scoped)
).pipe(Command.withDescription("check a stopped data dir, without writing it: checksums, sequence and version continuity, counters, checkpoint"))

const repairCurrentCommand = Command.make(
  "repair-current",
  {
    dataDir: Args.text({ name: "data-dir" }).pipe(Args.withDescription("the data directory whose CURRENT file is missing or damaged")),
    write: Options.boolean("write").pipe(Options.withDescription("write CURRENT (without it, only show what would be written)"))
  },
  ({ dataDir, write }) =>
    Effect.gen(function* () {
      const dir = path.resolve(dataDir)
      const plan = yield* planCurrentRepair(dir)
      if (plan._tag === "NothingToDo") {
        return yield* Console.log(`nothing to repair: ${dir}/CURRENT names ${plan.manifest}, which is there`)
      }
      for (const rejected of plan.rejected) yield* Console.log(`not ${rejected}`)
      yield* Console.log(
        `${dir}: ${plan.problem}.\nCURRENT naming ${plan.manifest} opens on a private copy with nothing dropped; ` +
          `its newest event is ${plan.lastSeq}.`
      )
      if (!write) {
        return yield* Console.log(`nothing was written: run \`wo repair-current --write ${dir}\` to write CURRENT naming ${plan.manifest}`)
      }
      const kept = yield* Effect.try({
        try: () => writeCurrent(dir, plan.manifest),
        catch: (e) => new StoreFailed({ reason: `cannot write ${dir}/CURRENT: ${e instanceof Error ? e.message : String(e)}` })
      })
      yield* Console.log(
        `wrote ${dir}/CURRENT naming ${plan.manifest}${kept === undefined ? "" : ` (the damaged one is kept as ${kept})`}; ` +
          `nothing else was changed. Next: wo verify ${dir}`
      )
    }).pipe(Effect.scoped)
).pipe(Command.withDescription(
  "rebuild a missing or damaged CURRENT from the newest MANIFEST that opens whole (tried on a private copy); writes only with --write"
))

const backupCommand = Command.make(
  "backup",
  {
    dataDir: Args.text({ name: "data-dir" }).pipe(Args.withDescription("the data directory to back up (a server may be running on it)"), Args.optional),
    dest: Args.text({ name: "dest" }).pipe(Args.withDescription("where the backup goes: a new or empty directory"), Args.optional),
    store: Options.text("store").pipe(
      Options.withDescription("a PostgreSQL store: not copied by writeonce; prints how to back it up with PostgreSQL's own tools"),
      Options.optional
    )
  },
  ({ dataDir, dest, store }) =>
    Effect.gen(function* () {
      if (Option.isSome(store)) return yield* fatal(POSTGRES_BACKUP)
      if (Option.isNone(dataDir) || Option.isNone(dest)) return yield* new UsageError({ message: "usage: wo backup <data-dir> <dest> (see wo backup --help)" })
      const taken = yield* takeBackup(dataDir.value, dest.value)
      yield* Console.log(
        `backed up seq ${taken.seq} of ${taken.source} into ${path.resolve(dest.value)} (${(taken.bytes / 2 ** 20).toFixed(1)} MiB) ` +
          `in ${taken.millis} ms, ${taken.server === undefined ? "from the stopped data dir" : `from the running server (pid ${taken.server}; writes held ${taken.heldMillis} ms)`}\n` +
          `check it: wo verify ${path.resolve(dest.value)}   restore it: wo restore ${path.resolve(dest.value)} <new-data-dir>`
      )
    })
).pipe(Command.withDescription(
  "take a consistent copy of a data dir while its server runs and writes (or of a stopped one); it records the seq it holds in WO-BACKUP"
))

const restoreCommand = Command.make(
  "restore",
  {
    backup: Args.text({ name: "backup" }).pipe(Args.withDescription("a backup taken by wo backup")),
    dataDir: Args.text({ name: "data-dir" }).pipe(Args.withDescription("the data directory to create: new or empty"))
  },
  ({ backup, dataDir }) =>
    Effect.gen(function* () {
      const restored = yield* restoreBackup(backup, dataDir)
      yield* Console.log(
        `restored seq ${restored.info.seq} (${restored.events} events, verified; backup taken ${restored.info.takenAt}) into ${path.resolve(dataDir)}\n` +
          `start on it: wo run <app-dir> --data ${path.resolve(dataDir)}`
      )
    })
).pipe(Command.withDescription("verify a backup, then copy it into a new or empty data dir (the backup is left as it is)"))

/** `wo backup --store`: PostgreSQL's own tools do this better than a copy through writeonce could. */
const POSTGRES_BACKUP =
  "wo backup does not copy a PostgreSQL store: use PostgreSQL's own tools. For a consistent physical copy of a " +
  "running cluster, `pg_basebackup -D <dest> -X stream -c fast` (with WAL archiving, archive_mode=on and " +
  "archive_command, it is also the base for point-in-time recovery: restore it and set recovery_target_time). " +
  "For a logical copy of the one database, `pg_dump -Fc <db>` (one snapshot: consistent while nodes write). " +
  "See \"Backup and restore\" in docs/operating.md."

const initCommand = Command.make(
  "init",
  {
    dir: Args.directory({ name: "dir" }).pipe(Args.withDescription("the new app's folder: missing or empty")),
    template: Options.choice("template", TEMPLATES).pipe(
      Options.withDescription(
        "the app to start from: tasks (a to-do list, one type) or library (books, members and loans, with invariants, " +
          "guarded fields, references, a view and the lend and return commands across types)"
      ),
      Options.withDefault("tasks" as const)
    )
  },
  ({ dir, template }) =>
    Effect.gen(function* () {
      const made = yield* scaffoldApp(dir, template)
      yield* Console.log(nextSteps(made))
    })
).pipe(Command.withDescription("start a new app (--template tasks or library): app.ts, decider specs, a recorded transcript, package.json, README"))

const junitOption = Options.file("junit").pipe(
  Options.withDescription("also write the results as JUnit XML to this file, for CI"),
  Options.optional
)

const noTypecheckOption = Options.boolean("no-typecheck").pipe(
  Options.withDescription("skip the typecheck of the app and its specs that runs first")
)

const testCommand = Command.make(
  "test",
  { appDir, junit: junitOption, noTypecheck: noTypecheckOption },
  ({ appDir, junit, noTypecheck }) =>
    Effect.gen(function* () {
      let index = 0
      yield* Console.log(tapHeader(`writeonce ${VERSION}: wo test ${appDir}`))
      const report = yield* testApp(appDir, (result) => Console.log(tapResult(result, ++index)), { typecheck: !noTypecheck })
      yield* Console.log(tapSummary(report))
      if (Option.isSome(junit)) yield* Effect.sync(() => fs.writeFileSync(junit.value, junitXml(report)))
      const failed = report.results.length === 0 || report.results.some((r) => !r.ok)
      // Exit once stdout has drained: a spec may leave a timer behind, and a report must never be cut short.
      yield* Effect.async<void>(() => {
        process.stdout.write("", () => process.exit(failed ? 1 : 0))
      })
    })
).pipe(Command.withDescription("typecheck an app and its specs, then run its decider specs (*.spec.ts) and replay its transcripts/*.http; TAP output"))

const wo = Command.make("wo").pipe(
  Command.withDescription("writeonce: declare your domain once; serve REST and MCP from an event-sourced store"),
  Command.withSubcommands([run, dev, initCommand, testCommand, replayCommand, verifyCommand, repairCurrentCommand, backupCommand, restoreCommand])
)

const cli = Command.run(wo, { name: "writeonce", version: VERSION })

const args = process.argv.slice(2)
;(wantsTopHelp(args) ? printTopHelp(wo, VERSION) : cli(process.argv)).pipe(
  // @effect/cli has already printed what was wrong with the command line, in one line (plain-console.ts).
  Effect.catchIf(ValidationError.isValidationError, () => Effect.sync(() => process.exit(2))),
  Effect.provide(NodeContext.layer),
  runCommand
)
