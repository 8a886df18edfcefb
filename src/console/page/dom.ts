/** A tiny element builder. Text always goes in as text nodes, so row data can never become markup. */

export type Child = Node | string | number | null | undefined | false

export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Readonly<Record<string, string | undefined>> = {},
  ...children: ReadonlyArray<Child | ReadonlyArray<Child>>
): HTMLElementTagNameMap[K] => {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) if (value !== undefined) el.setAttribute(name, value)
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue
    el.append(typeof child === "object" ? child : String(child))
  }
  return el
}

/** The element with this id; the page's HTML declares every one the script uses. */
export const byId = (id: string): HTMLElement => {
  const el = document.getElementById(id)
  if (el === null) throw new Error(`the console page has no #${id}`)
  return el
}

/** A card's body, emptied and filled with new content. */
export const fill = (cardId: string, ...children: ReadonlyArray<Child | ReadonlyArray<Child>>) => {
  const body = byId(cardId).querySelector(".body")!
  body.replaceChildren(...children.flat().filter((c): c is Node | string => c !== null && c !== undefined && c !== false).map((c) => (typeof c === "number" ? String(c) : c)))
}
