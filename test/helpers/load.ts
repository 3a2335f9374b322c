/** Time bounds for tests that run on a shared machine. */
import { cpus, loadavg } from 'node:os';

/**
 * `ms` stretched by how overloaded the machine is: its 1-minute load average per core, when
 * above 1. On a loaded machine every step also waits for a CPU, so a bound that holds on an idle
 * one is multiplied by the share of a CPU each runnable process gets.
 */
export function stretchByLoad(ms: number): number {
  return ms * Math.max(1, (loadavg()[0] ?? 0) / cpus().length);
}
