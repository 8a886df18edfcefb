/**
 * The writer's exit for a write made without a fiber (`executeNow`), turned into a surface's answer: `ok` for a
 * success, `refused` for a refusal, and `died` for a defect (a bug of ours), which is also where anything `ok` or
 * `refused` throws goes. It runs inside the writer's batch: nothing may throw into it.
 */
import { Cause, Exit, Option } from "effect"
import type { CommandError } from "../domain/errors.ts"

export const answerExit = <A, R>(
  exit: Exit.Exit<A, CommandError>,
  ok: (value: A) => R,
  refused: (error: CommandError) => R,
  answer: (answer: R) => void,
  died: (cause: Cause.Cause<unknown>) => void
): void => {
  let answered: R
  try {
    if (Exit.isSuccess(exit)) answered = ok(exit.value)
    else {
      const error = Cause.failureOption(exit.cause)
      if (Option.isNone(error)) return died(exit.cause)
      answered = refused(error.value)
    }
  } catch (e) {
    return died(Cause.die(e))
  }
  answer(answered)
}
