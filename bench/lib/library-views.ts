// The stored state of the library's `loans_by_member` after loans 1..n, one loan out per member (loan k to member
// k), as bench/lib/library-writer.ts lays the log out: written as the server's batches leave it, exact at the
// checkpoint.
import type { ClassicLevel } from 'classic-level';
import type { CompiledView } from '../../src/domain/compile-views.ts';
import { viewKey } from '../../src/log/classic-level/log-keys.ts';
import { seal } from '../../src/log/record.ts';
import { viewRecordJson } from '../../src/log/view-record.ts';
import type { LibraryLayout } from './library-writer.ts';

export async function writeViewRecords(db: ClassicLevel<string, string>, view: CompiledView, definition: string, L: LibraryLayout, _batchSize: number): Promise<void> {
  // One whole value: every member's loans in one record.
  const parts: string[] = [];
  for (let k = 1; k <= L.loans; k++) parts.push(`"${k}":["${k}"]`);
  const key = viewKey(view.name);
  await db.put(key, seal(key, viewRecordJson(definition, L.lastLoanSeq, { valueJson: `{${parts.join(',')}}` })));
}
