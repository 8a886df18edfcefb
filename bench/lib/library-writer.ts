// Builds a lending library's data dir fast by writing a fresh classic-level dir directly, in the server's own format
// (src/log/classic-level/log-keys.ts, record.ts; the shapes a real `lend` leaves, as bench/lib/row-writer.ts does for
// products): `books` books with a million copies each (created, then add_copies), `members` members, and `loans`
// lends (loan k: member k, a copy of book 1 + (k - 1) % books; a check_out and the loan's create, one command), each
// event with its history record; the rows, id counters, row counts, checkpoint and format marker as the server's
// batches leave them; and the stored state of `loans_by_member` when the app declares it (one loan out per member).
// Other views are not written: the server folds them from the log in the background at its first start.
//
// One key range at a time (events, history, rows), so the table files LevelDB flushes seldom overlap.
import { ClassicLevel } from 'classic-level';
import type { CompiledApp } from '../../src/domain/compile.ts';
import { CHECKPOINT_KEY, counterKey, eventKey, FORMAT, FORMAT_KEY, historyKey, rowCountKey, rowKey } from '../../src/log/classic-level/log-keys.ts';
import { rowPayload } from '../../src/log/classic-level/level-records.ts';
import { seal } from '../../src/log/record.ts';
import { viewDefinition } from '../../src/log/view-record.ts';
import { writeViewRecords } from './library-views.ts';

export const COPIES = 1_000_000;

export interface LibraryShape {
  books: number;
  members: number;
  /** loans out, one each for members 1..loans */
  loans: number;
}

export interface LibraryLayout extends LibraryShape {
  /** the seq of loan k's create (its check_out is the seq before) */
  loanSeq: (k: number) => number;
  lastSeq: number;
  /** the seq the view value last changed at (the last loan's create; 0 with no loan) */
  lastLoanSeq: number;
  /** when each event was written (ms), by seq */
  at: (seq: number) => number;
}

export const libraryLayout = (shape: LibraryShape, at0 = Date.now()): LibraryLayout => {
  const { books, members, loans } = shape;
  const loanSeq = (k: number) => 2 * books + members + 2 * k;
  return { ...shape, loanSeq, lastSeq: loanSeq(loans), lastLoanSeq: loans > 0 ? loanSeq(loans) : 0, at: (seq) => at0 + seq };
}

type Batch = ReturnType<ClassicLevel<string, string>['batch']>;

const ACTOR = '"actor":{"client":"in-process"}';
const correlation = (k: number) => `00000000-0000-4000-8000-${String(k).padStart(12, '0')}`;
/** Check-outs of book b among loans 1..k. */
const checkedOut = (books: number, b: number, k: number) => (k >= b ? Math.floor((k - b) / books) + 1 : 0);

/** Writes the library into an empty data dir; the server must not be running. */
export async function writeLibrary(dir: string, shape: LibraryShape, app: CompiledApp, batchSize = 50_000): Promise<{ ms: number; events: number }> {
  const started = performance.now();
  const L = libraryLayout(shape);
  const { books, members, loans } = L;
  const db = new ClassicLevel<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8', writeBufferSize: 32 * 1024 * 1024 });
  await db.open();
  try {
    /** Calls `put(batch, i)` for i in first..last, a batch every `batchSize`. */
    const inBatches = async (first: number, last: number, put: (batch: Batch, i: number) => void) => {
      for (let from = first; from <= last; from += batchSize) {
        const batch = db.batch();
        for (let i = from, to = Math.min(last, from + batchSize - 1); i <= to; i++) put(batch, i);
        await batch.write();
      }
    };
    const event = (batch: Batch, seq: number, body: string) => {
      const key = eventKey(seq);
      batch.put(key, seal(key, `{"seq":${seq},"at":${L.at(seq)},${body},${ACTOR}}`));
    };
    const history = (batch: Batch, type: string, id: number, version: number, seq: number) => {
      const key = historyKey(type, String(id), version);
      batch.put(key, seal(key, String(seq)));
    };
    const row = (batch: Batch, type: string, id: number, json: string) => {
      const key = rowKey(type, String(id));
      batch.put(key, seal(key, rowPayload(1, json)));
    };

    // Events, in seq order: books (created, add_copies), members, then each lend's check_out and loan.
    await inBatches(1, 2 * books, (batch, seq) => {
      const b = Math.ceil(seq / 2);
      event(batch, seq, seq % 2 === 1
        ? `"type":"books","id":"${b}","version":1,"schema":1,"kind":"created","data":{"title":"b${b}","author":"a","copies":0,"available":0}`
        : `"type":"books","id":"${b}","version":2,"schema":1,"kind":"invoked","method":"add_copies","params":{"n":${COPIES}},"data":{"copies":${COPIES},"available":${COPIES}}`);
    });
    await inBatches(1, members, (batch, m) => event(batch, 2 * books + m, `"type":"members","id":"${m}","version":1,"schema":1,"kind":"created","data":{"name":"m${m}"}`));
    await inBatches(1, loans, (batch, k) => {
      const b = 1 + ((k - 1) % books);
      const out = checkedOut(books, b, k);
      const command = `"command":"lend","correlation":"${correlation(k)}"`;
      event(batch, L.loanSeq(k) - 1, `"type":"books","id":"${b}","version":${2 + out},"schema":1,"kind":"invoked","method":"check_out","params":{},"data":{"available":${COPIES - out}},${command}`);
      event(batch, L.loanSeq(k), `"type":"loans","id":"${k}","version":1,"schema":1,"kind":"created","data":{"book":"${b}","member":"${k}","status":"out"},${command}`);
    });

    // History records, in key order (books, loans, members).
    await inBatches(1, books, (batch, b) => {
      history(batch, 'books', b, 1, 2 * b - 1);
      history(batch, 'books', b, 2, 2 * b);
      for (let j = 0, k = b; k <= loans; j++, k += books) history(batch, 'books', b, 3 + j, L.loanSeq(k) - 1);
    });
    await inBatches(1, loans, (batch, k) => history(batch, 'loans', k, 1, L.loanSeq(k)));
    await inBatches(1, members, (batch, m) => history(batch, 'members', m, 1, 2 * books + m));

    // Rows, in key order.
    await inBatches(1, books, (batch, b) => {
      const out = checkedOut(books, b, loans);
      row(batch, 'books', b, `{"id":"${b}","version":${2 + out},"title":"b${b}","author":"a","copies":${COPIES},"available":${COPIES - out}}`);
    });
    await inBatches(1, loans, (batch, k) => row(batch, 'loans', k, `{"id":"${k}","version":1,"book":"${1 + ((k - 1) % books)}","member":"${k}","status":"out"}`));
    await inBatches(1, members, (batch, m) => row(batch, 'members', m, `{"id":"${m}","version":1,"name":"m${m}"}`));

    const view = app.views.get('loans_by_member');
    if (view !== undefined) await writeViewRecords(db, view, viewDefinition(view), L, batchSize);

    const meta = db.batch();
    for (const [type, n] of [['books', books], ['members', members], ['loans', loans]] as const) {
      meta.put(counterKey(type), seal(counterKey(type), String(n)));
      meta.put(rowCountKey(type), seal(rowCountKey(type), String(n)));
    }
    meta.put(CHECKPOINT_KEY, seal(CHECKPOINT_KEY, String(L.lastSeq)));
    meta.put(FORMAT_KEY, seal(FORMAT_KEY, FORMAT));
    await meta.write({ sync: true });
    return { ms: performance.now() - started, events: L.lastSeq };
  } finally {
    await db.close();
  }
}
