/** A one-line logger for the server's own output: `<time> <LEVEL> <message>`; `WO_LOG_LEVEL` sets the floor. */
import { Cause, Config, Effect, Layer, Logger, LogLevel } from "effect"

const line = Logger.make(({ logLevel, message, date, cause }) => {
  const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
  const detail = Cause.isEmpty(cause) ? "" : `\n${Cause.pretty(cause)}`
  const out = `${date.toISOString()} ${logLevel.label.padEnd(5)} ${text}${detail}`
  if (logLevel.ordinal >= LogLevel.Error.ordinal) console.error(out)
  else console.log(out)
})

export const LoggerLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const level = yield* Config.logLevel("WO_LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))
    return Layer.merge(Logger.replace(Logger.defaultLogger, line), Logger.minimumLogLevel(level))
  })
)

/**
 * `LoggerLive` as the program's only logger. `NodeRuntime.runMain` swaps Effect's default logger for its pretty
 * one before the program runs; replacing the default alone would leave that one printing every line again.
 */
export const LoggerOnlyLive = Layer.flatMap(Logger.remove(Logger.prettyLoggerDefault), () => LoggerLive)
