/** Server settings the console needs (`/console/settings.json`, public: no secret in it). */
import { request } from './api';

export interface ConsoleSettings {
  /** Header prefix of publish options (`Svc` → `Svc-Retries`). */
  headerPrefix: string;
}

let settings: Promise<ConsoleSettings> | undefined;

export function consoleSettings(): Promise<ConsoleSettings> {
  settings ??= request<ConsoleSettings>('/console/settings.json');
  return settings;
}

/** `Retries` → `Svc-Retries`. */
export async function prefixed(name: string): Promise<string> {
  return `${(await consoleSettings()).headerPrefix}-${name}`;
}
