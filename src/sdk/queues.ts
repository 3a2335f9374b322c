import type { HttpClient } from './http.js';

/** A FIFO queue; `lag` is the number of messages waiting to start. Times are ms. */
export interface Queue {
  name: string;
  createdAt: number;
  updatedAt: number;
  parallelism: number;
  paused: boolean;
  lag: number;
}

/** `/v2/queues`: FIFO queues (publish into one with `FerryClient.enqueue`). */
export class QueuesApi {
  constructor(private readonly http: HttpClient) {}

  /** Creates the queue (parallelism 1 unless given) or changes the given settings. */
  async upsert(req: { queueName: string; parallelism?: number; paused?: boolean }): Promise<void> {
    await this.http.request({
      method: 'POST',
      path: '/v2/queues',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(req),
    });
  }

  async list(): Promise<Queue[]> {
    return this.http.request<Queue[]>({ method: 'GET', path: '/v2/queues' });
  }

  async get(name: string): Promise<Queue> {
    return this.http.request<Queue>({ method: 'GET', path: this.path(name) });
  }

  /** Deletes the queue and cancels its messages. */
  async delete(name: string): Promise<void> {
    await this.http.request({ method: 'DELETE', path: this.path(name) });
  }

  /** Stops starting the queue's messages; enqueues are still accepted. */
  async pause(name: string): Promise<void> {
    await this.http.request({ method: 'POST', path: `${this.path(name)}/pause` });
  }

  async resume(name: string): Promise<void> {
    await this.http.request({ method: 'POST', path: `${this.path(name)}/resume` });
  }

  private path(name: string): string {
    return `/v2/queues/${encodeURIComponent(name)}`;
  }
}
