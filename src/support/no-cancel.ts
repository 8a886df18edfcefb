/** The cancel of a command already answered (or refused before it was queued): nothing to undo. */
export const noCancel = () => {}
