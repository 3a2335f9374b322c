/**
 * One message's history from the events log: its timeline (created, active, retried, delivered
 * or failed), the request it carries and every response it got.
 */
import { useQuery } from '@tanstack/preact-query';
import { Link } from 'wouter-preact';
import { request } from '../api';
import {
  Base64Body,
  Empty,
  ErrorBox,
  HeaderTable,
  Labels,
  labelsOf,
  Loading,
  PageHeader,
} from '../components';
import { formatDuration, formatTime } from '../format';
import type { Event, EventPage } from '../types';

/** Events of one message, oldest first. A message has a handful; 1,000 covers any retry policy. */
async function messageEvents(messageId: string): Promise<Event[]> {
  const page = await request<EventPage>('/v2/events', { query: { messageId, count: 1000 } });
  return [...page.events].sort((a, b) => a.time - b.time);
}

function Timeline(props: { events: Event[] }) {
  const start = props.events[0]?.time ?? 0;
  return (
    <ol class="timeline" aria-label="Timeline">
      {props.events.map((event, i) => (
        <li key={i} class={`step state-${event.state.toLowerCase()}`}>
          <span class={`badge state-${event.state.toLowerCase()}`}>{event.state}</span>
          <span class="nowrap">{formatTime(event.time)}</span>
          {i > 0 && <span class="muted">+{formatDuration(event.time - start)}</span>}
          {event.responseStatus !== undefined && <span>HTTP {event.responseStatus}</span>}
          {event.error && (
            <span class="error-text">
              <bdi>{event.error}</bdi>
            </span>
          )}
          {event.nextDeliveryTime !== undefined && event.state === 'RETRY' && (
            <span class="muted">next attempt {formatTime(event.nextDeliveryTime)}</span>
          )}
        </li>
      ))}
    </ol>
  );
}

export function MessageLogPage(props: { messageId: string }) {
  const events = useQuery({
    queryKey: ['message-events', props.messageId],
    queryFn: () => messageEvents(props.messageId),
  });
  return (
    <section>
      <PageHeader
        title={
          <>
            Message <bdi>{props.messageId}</bdi>
          </>
        }
      >
        <Link href="/logs">All logs</Link>
      </PageHeader>
      {events.isPending ? (
        <Loading what="the message's events" />
      ) : events.isError ? (
        <ErrorBox error={events.error} what="load the message's events" />
      ) : events.data.length === 0 ? (
        <Empty>
          No events for this message: the id is unknown, belongs to another account, or its log
          entries were pruned.
        </Empty>
      ) : (
        <MessageDetail events={events.data} />
      )}
    </section>
  );
}

function MessageDetail(props: { events: Event[] }) {
  const last = props.events[props.events.length - 1] as Event;
  const responses = props.events.filter((e) => e.responseStatus !== undefined);
  const labels = labelsOf(last);
  return (
    <>
      <dl class="facts">
        <dt>State</dt>
        <dd>
          <span class={`badge state-${last.state.toLowerCase()}`}>{last.state}</span>
        </dd>
        <dt>Destination</dt>
        <dd class="mono">
          {last.method} <bdi>{last.url}</bdi>
        </dd>
        {last.topicName && (
          <>
            <dt>URL group</dt>
            <dd>
              <bdi>{last.topicName}</bdi>
              {last.endpointName && (
                <>
                  {' (endpoint '}
                  <bdi>{last.endpointName}</bdi>)
                </>
              )}
            </dd>
          </>
        )}
        {labels.length > 0 && (
          <>
            <dt>Labels</dt>
            <dd>
              <Labels labels={labels} />
            </dd>
          </>
        )}
        {last.scheduleId && (
          <>
            <dt>Schedule</dt>
            <dd class="mono">{last.scheduleId}</dd>
          </>
        )}
        {last.queueName && (
          <>
            <dt>Queue</dt>
            <dd>{last.queueName}</dd>
          </>
        )}
        <dt>Retries</dt>
        <dd>
          {last.retried} of {last.maxRetries}
        </dd>
      </dl>
      <h2>Timeline</h2>
      <Timeline events={props.events} />
      <h2>Request</h2>
      <h3>Headers</h3>
      <HeaderTable headers={last.header} label="Request headers" />
      <h3>Body</h3>
      <Base64Body base64={last.body} label="Request body" />
      <h2>Responses</h2>
      {responses.length === 0 ? (
        <p class="muted">No response recorded (yet).</p>
      ) : (
        responses.map((event, i) => (
          <details key={i} open={i === responses.length - 1} class="response">
            <summary>
              HTTP {event.responseStatus} at {formatTime(event.time)} (attempt {event.retried + 1})
            </summary>
            <h3>Headers</h3>
            <HeaderTable headers={event.responseHeader} label={`Response ${i + 1} headers`} />
            <h3>Body</h3>
            <Base64Body base64={event.responseBody} label={`Response ${i + 1} body`} />
          </details>
        ))
      )}
    </>
  );
}
