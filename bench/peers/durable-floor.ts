// The durable-write floor on classic-level (the server is bench/peers/floor-core.ts, the write
// bench/peers/level-floor-write.ts). Data dir: $DATA_DIR (the harness makes a fresh one).
import { floorServer } from './floor-core.ts';
import { openLevelFloorWrite } from './level-floor-write.ts';
import { listenAndAnnounce } from './listen.ts';

listenAndAnnounce(floorServer(await openLevelFloorWrite(process.env.DATA_DIR!)));
