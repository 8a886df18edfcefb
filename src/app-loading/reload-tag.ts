/**
 * `wo dev` imports a changed app afresh by tagging its module URLs with a query: the version's tag (a digest of the
 * app folder's files, so a save that changes nothing imports nothing new), and the app folder whose files carry the
 * tag on to what they import (app-loader.ts), so node_modules and writeonce stay shared.
 */
export const RELOAD_PARAM = "wo-reload"
export const RELOAD_ROOT_PARAM = "wo-root"
