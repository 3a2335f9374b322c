/** Server settings the console needs (`/console/settings.json`, public: no secret in it). */
import { request } from './api';

export interface ConsoleSettings {
  /** Header prefix of publish options (`Svc` → `Svc-Retries`). */
  headerPrefix: string;
  /** This server serves the messaging API: token sign-in works here. */
  messaging: boolean;
  /** This server serves the management API: e-mail and API key sign-in works here. */
  management: boolean;
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
