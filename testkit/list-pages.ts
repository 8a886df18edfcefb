/**
 * A REST list read whole: page after page, following `nextCursor`, until the last page (or `max` items). A page
 * answered with anything but 200 throws, naming the request and the answer.
 */
export const listItems = async <T = Record<string, unknown>>(url: string, pathAndQuery: string, max = Infinity): Promise<Array<T>> => {
  const items: Array<T> = []
  let cursor: string | undefined
  do {
    const target = `${url}${pathAndQuery}${cursor === undefined ? "" : `${pathAndQuery.includes("?") ? "&" : "?"}cursor=${encodeURIComponent(cursor)}`}`
    const res = await fetch(target)
    const text = await res.text()
    if (res.status !== 200) throw new Error(`GET ${target} answered ${res.status}: ${text}`)
    const page = JSON.parse(text) as { items: Array<T>; nextCursor?: string }
    items.push(...page.items)
    cursor = page.nextCursor
  } while (cursor !== undefined && items.length < max)
  return items
}

/** The ids of a REST list read whole (`listItems`). */
export const listIds = async (url: string, pathAndQuery: string, max = Infinity): Promise<Array<string>> =>
  (await listItems<{ id: string }>(url, pathAndQuery, max)).map((item) => item.id)
