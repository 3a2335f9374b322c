/**
 * The events log, newest first, with every filter of `GET /v2/events`, paged by the API's
 * cursor (one page in the browser at a time, however large the log).
 */
import { useQuery } from '@tanstack/preact-query';
import { Link } from 'wouter-preact';
import { request } from '../api';
import {
  Empty,
  ErrorBox,
  Field,
  Labels,
  labelsOf,
  Loading,
  PageHeader,
  Pager,
} from '../components';
import { FilterForm, toQuery, useUrlQuery } from '../filters';
import { formatTime, fromLocalInput, toLocalInput } from '../format';
import type { EventPage } from '../types';

const STATES = [
  'CREATED',
  'ACTIVE',
  'RETRY',
  'ERROR',
  'IN_PROGRESS',
  'DELIVERED',
  'FAILED',
  'CANCEL_REQUESTED',
  'CANCELLED',
] as const;

const FILTERS = [
  'state',
  'label',
  'messageId',
  'url',
  'topicName',
  'scheduleId',
  'queueName',
  'fromDate',
  'toDate',
  'cursor',
] as const;

const PAGE_SIZE = 50;

export function LogsPage() {
  const [params, setParams] = useUrlQuery();
  const query = toQuery(params, FILTERS);
  const events = useQuery({
    queryKey: ['events', query],
    queryFn: () => request<EventPage>('/v2/events', { query: { ...query, count: PAGE_SIZE } }),
  });
  const current = Object.fromEntries(params.entries());
  return (
    <section>
      <PageHeader title="Logs" />
      <FilterForm
        label="Log filters"
        params={params}
        onApply={(values) =>
          setParams({
            ...values,
            fromDate: String(fromLocalInput(values.fromDate ?? '') ?? ''),
            toDate: String(fromLocalInput(values.toDate ?? '') ?? ''),
          })
        }
      >
        <Field label="State">
          <select name="state" defaultValue={params.get('state') ?? ''}>
            <option value="">Any</option>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Label">
          <input name="label" defaultValue={params.get('label') ?? ''} />
        </Field>
        <Field label="Message id">
          <input name="messageId" defaultValue={params.get('messageId') ?? ''} />
        </Field>
        <Field label="URL">
          <input name="url" defaultValue={params.get('url') ?? ''} />
        </Field>
        <Field label="URL group">
          <input name="topicName" defaultValue={params.get('topicName') ?? ''} />
        </Field>
        <Field label="Schedule">
          <input name="scheduleId" defaultValue={params.get('scheduleId') ?? ''} />
        </Field>
        <Field label="Queue">
          <input name="queueName" defaultValue={params.get('queueName') ?? ''} />
        </Field>
        <Field label="From">
          <input
            name="fromDate"
            type="datetime-local"
            defaultValue={toLocalInput(Number(params.get('fromDate')) || undefined)}
          />
        </Field>
        <Field label="To">
          <input
            name="toDate"
            type="datetime-local"
            defaultValue={toLocalInput(Number(params.get('toDate')) || undefined)}
          />
        </Field>
      </FilterForm>
      {events.isPending ? (
        <Loading what="the log" />
      ) : events.isError ? (
        <ErrorBox error={events.error} what="load the log" />
      ) : events.data.events.length === 0 ? (
        <Empty>No events match these filters.</Empty>
      ) : (
        <>
          <div class="table-wrap">
            <table class="list" aria-label="Events">
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">State</th>
                  <th scope="col">Message</th>
                  <th scope="col">URL</th>
                  <th scope="col">Labels</th>
                  <th scope="col">Status</th>
                </tr>
              </thead>
              <tbody>
                {events.data.events.map((event, i) => (
                  <tr key={`${event.messageId}-${event.time}-${i}`}>
                    <td class="nowrap">{formatTime(event.time)}</td>
                    <td>
                      <span class={`badge state-${event.state.toLowerCase()}`}>{event.state}</span>
                    </td>
                    <td class="mono">
                      <Link href={`/logs/${encodeURIComponent(event.messageId)}`}>
                        {event.messageId}
                      </Link>
                    </td>
                    <td class="mono clip" title={event.url}>
                      {event.url}
                    </td>
                    <td class="wrap">
                      <Labels labels={labelsOf(event)} />
                    </td>
                    <td>{event.responseStatus ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager cursor={events.data.cursor} current={current} setParams={setParams} />
        </>
      )}
    </section>
  );
}
