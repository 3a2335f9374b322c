import type { HttpClient } from './http.js';

/** A flow-control key as `GET /v2/flowControl/{key}` returns it (times in seconds). */
export interface FlowControlKey {
  flowControlKey: string;
  waitListSize: number;
  parallelismMax: number;
  parallelismCount: number;
  rateMax: number;
  rateCount: number;
  /** Seconds. */
  ratePeriod: number;
  /** Unix seconds. */
  ratePeriodStart: number;
  isPinnedParallelism: boolean;
  isPinnedRate: boolean;
  isPaused: boolean;
}

/** `/v2/flowControl`: inspect, pause and pin flow-control keys (see docs/flow-control.md). */
export class FlowControlApi {
  constructor(private readonly http: HttpClient) {}

  /** Keys of the account, by name; `search` keeps those whose name contains it. */
  async list(search?: string): Promise<FlowControlKey[]> {
    const query = search === undefined ? '' : `?search=${encodeURIComponent(search)}`;
    return this.http.request<FlowControlKey[]>({ method: 'GET', path: `/v2/flowControl${query}` });
  }

  async get(key: string): Promise<FlowControlKey> {
    return this.http.request<FlowControlKey>({ method: 'GET', path: this.path(key) });
  }

  /** Stops starting the key's messages; publishes are still accepted and wait. */
  async pause(key: string): Promise<FlowControlKey> {
    return this.post(key, 'pause');
  }

  async resume(key: string): Promise<FlowControlKey> {
    return this.post(key, 'resume');
  }

  /** Fixes the given limits (later publishes no longer change them) and resets the rate. */
  async pin(
    key: string,
    limits: { parallelism?: number; rate?: number; period?: number | string },
  ): Promise<FlowControlKey> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(limits)) {
      if (value !== undefined) query.set(name, String(value));
    }
    return this.post(key, `pin?${query.toString()}`);
  }

  /** Lets publishes change the limits again. */
  async unpin(
    key: string,
    which: { parallelism?: boolean; rate?: boolean },
  ): Promise<FlowControlKey> {
    const query = new URLSearchParams();
    if (which.parallelism) query.set('parallelism', 'true');
    if (which.rate) query.set('rate', 'true');
    return this.post(key, `unpin?${query.toString()}`);
  }

  /** Starts a new rate period now with no attempts counted. */
  async resetRate(key: string): Promise<FlowControlKey> {
    return this.post(key, 'resetRate');
  }

  /** The account's deliveries in flight and its `max_global_parallelism`. */
  async globalParallelism(): Promise<{ parallelismMax: number; parallelismCount: number }> {
    return this.http.request({ method: 'GET', path: '/v2/globalParallelism' });
  }

  private path(key: string): string {
    return `/v2/flowControl/${encodeURIComponent(key)}`;
  }

  private post(key: string, action: string): Promise<FlowControlKey> {
    return this.http.request<FlowControlKey>({
      method: 'POST',
      path: `${this.path(key)}/${action}`,
    });
  }
}
