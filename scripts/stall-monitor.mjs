/**
 * Loaded into a measured server (`node --import ./scripts/stall-monitor.mjs …`) by
 * scripts/measure-lists.mjs and scripts/measure-fanout.mjs: records how long the event loop was
 * held between two turns, in CPU time as well as in wall time, and writes the records to the
 * file named by `FERRY_STALL_FILE` when the process exits.
 *
 * Why CPU time: on a loaded machine a process waits for a CPU, and every wall-clock figure
 * (`/health` latency, prom-client's event-loop lag) includes those waits. A 1 ms timer runs
 * between two turns of the event loop; the process's CPU time (`process.cpuUsage()`) that passed
 * between two of its runs is what the server itself did meanwhile, whatever the load: the
 * length of its longest synchronous stretch. It counts every thread of the process (the idle
 * delivery thread, the garbage collector's helpers), so it is an upper bound.
 */
import { writeFileSync } from 'node:fs';

const file = process.env.FERRY_STALL_FILE;
if (file) {
  const records = [];
  let cpu = process.cpuUsage();
  let wall = performance.now();
  setInterval(() => {
    const nowCpu = process.cpuUsage();
    const nowWall = performance.now();
    const cpuMs = (nowCpu.user - cpu.user + nowCpu.system - cpu.system) / 1000;
    const wallMs = nowWall - wall;
    // Only the gaps worth a look (a turn normally takes far less).
    if (cpuMs >= 2 || wallMs >= 10) {
      records.push({ at: performance.timeOrigin + wall, cpuMs, wallMs });
    }
    cpu = nowCpu;
    wall = nowWall;
  }, 1).unref();
  process.once('exit', () => writeFileSync(file, JSON.stringify(records)));
}
