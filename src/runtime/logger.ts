/** A one-line logger for the server's own output: `<time> <LEVEL> <message>`; `WO_LOG_LEVEL` sets the floor. */
import { Cause, Config, ConfigError, Effect, Either, Layer, Logger, LogLevel } from "effect"

const line = Logger.make(({ logLevel, message, date, cause }) => {
  const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
  const detail = Cause.isEmpty(cause) ? "" : `\n${Cause.pretty(cause)}`
  const out = `${date.toISOString()} ${logLevel.label.padEnd(5)} ${text}${detail}`
  if (logLevel.ordinal >= LogLevel.Error.ordinal) console.error(out)
  else console.log(out)
})

/**
 * The levels WO_LOG_LEVEL accepts, in any case: Effect's names (`Warning`, `None`: what the settings table lists)
 * and its labels (`WARN`, `OFF`: what a log line shows). Effect's own `Config.logLevel` takes only the labels.
 */
const LEVELS = new Map(LogLevel.allLevels.flatMap((l) => [[l._tag.toLowerCase(), l], [l.label.toLowerCase(), l]] as const))

const logLevelConfig = Config.string("WO_LOG_LEVEL").pipe(
  Config.mapOrFail((s) => {
    const level = LEVELS.get(s.trim().toLowerCase())
    return level !== undefined
      ? Either.right(level)
      : Either.left(ConfigError.InvalidData([], `expected one of Trace, Debug, Info, Warning, Error, Fatal, None, got "${s}"`))
  }),
  Config.withDefault(LogLevel.Info)
)

export const LoggerLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const level = yield* logLevelConfig
    return Layer.merge(Logger.replace(Logger.defaultLogger, line), Logger.minimumLogLevel(level))
  })
)

/**
 * `LoggerLive` as the program's only logger. `NodeRuntime.runMain` swaps Effect's default logger for its pretty
 * one before the program runs; replacing the default alone would leave that one printing every line again.
 */
export const LoggerOnlyLive = Layer.flatMap(Logger.remove(Logger.prettyLoggerDefault), () => LoggerLive)
