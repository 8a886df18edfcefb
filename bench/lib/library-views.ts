// The stored state of the library's `loans_by_member` after loans 1..n, one loan out per member (loan k to member
// k), as bench/lib/library-writer.ts lays the log out, written as the server's batches leave it (exact at the
// checkpoint): one whole value (log/view-record.ts), or, for the keyed view (bench/apps/library-keyed), one entry
// per member under the view's definition and the view's own record naming that definition (view-entry-record.ts).
import type { ClassicLevel } from 'classic-level';
import type { CompiledView } from '../../src/domain/compile-views.ts';
import { viewEntryKey, viewKey } from '../../src/log/classic-level/log-keys.ts';
import { seal } from '../../src/log/record.ts';
import { keyedViewRecordJson, viewEntryJson } from '../../src/log/view-entry-record.ts';
import { viewRecordJson } from '../../src/log/view-record.ts';
import type { LibraryLayout } from './library-writer.ts';

export async function writeViewRecords(db: ClassicLevel<string, string>, view: CompiledView, definition: string, L: LibraryLayout, batchSize: number): Promise<void> {
  const key = viewKey(view.name);
  if (!view.keyed) {
    // One whole value: every member's loans in one record.
    const parts: string[] = [];
    for (let k = 1; k <= L.loans; k++) parts.push(`"${k}":["${k}"]`);
    await db.put(key, seal(key, viewRecordJson(definition, L.lastLoanSeq, { valueJson: `{${parts.join(',')}}` })));
    return;
  }
  // The entries in key order (member ids as strings: "1", "10", "100", ...), so the table files do not overlap.
  const members = Array.from({ length: L.loans }, (_, i) => String(i + 1)).sort();
  for (let from = 0; from < members.length; from += batchSize) {
    const batch = db.batch();
    for (const m of members.slice(from, from + batchSize)) {
      const entryKey = viewEntryKey(view.name, definition, m);
      batch.put(entryKey, seal(entryKey, viewEntryJson(L.loanSeq(Number(m)), `{"loans":["${m}"]}`)));
    }
    await batch.write();
  }
  await db.put(key, seal(key, keyedViewRecordJson(definition)));
}
