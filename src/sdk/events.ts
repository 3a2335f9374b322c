import { withCursor } from './http.js';
import type { HttpClient } from './http.js';
import type { Event, EventFilter, EventsPage, PageRequest } from './types.js';

/** `GET /v2/events`: the log of every message state transition, newest first. */
export class EventsApi {
  constructor(private readonly http: HttpClient) {}

  /** One page of events; pass the returned `cursor` for the next (absent on the last page). */
  async list(req: PageRequest & { filter?: EventFilter } = {}): Promise<EventsPage> {
    const res = await this.http.request<{ cursor?: string; events: Event[] }>({
      method: 'GET',
      path: '/v2/events',
      query: { ...req.filter, cursor: req.cursor, count: req.count },
    });
    return withCursor(res.cursor, { events: res.events });
  }
}
