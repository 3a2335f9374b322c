/** Schedules: list with last and next fire times, create, pause, resume, delete. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { request } from '../api';
import { formRaw, formText } from '../forms';
import {
  ActionsOff,
  actionsOff,
  ConfirmButton,
  DestinationFields,
  Empty,
  ErrorBox,
  Field,
  Loading,
  Notice,
  PageHeader,
  PauseButton,
  phrase,
} from '../components';
import { formatInZone, previewCron, timeZones } from '../cron-preview';
import { formatTime } from '../format';
import { addHeader, addSetting, outgoing } from '../outgoing';
import { segment } from '../paths';
import { prefixed } from '../settings';
import type { Schedule } from '../types';

/** The browser's time zone, in which the console writes every time. */
const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/**
 * A schedule's time as the console writes every time (the browser's zone) and, for a schedule
 * with a `CRON_TZ=` of another zone, under it in that zone too: the zone the schedule's hours are
 * written in, as the form's preview shows them.
 */
function ScheduleTime(props: { ms: number | undefined; cron: string }) {
  const local = formatTime(props.ms);
  const zone = /^CRON_TZ=(\S+)\s/.exec(props.cron)?.[1];
  if (local === '' || props.ms === undefined || zone === undefined || zone === BROWSER_ZONE) {
    return <>{local}</>;
  }
  let inZone: string;
  try {
    inZone = formatInZone(new Date(props.ms), zone);
  } catch {
    return <>{local}</>; // a zone this browser does not know
  }
  return (
    <>
      {local}
      <br />
      <span class="muted">
        {inZone} <bdi>{zone}</bdi>
      </span>
    </>
  );
}

export function SchedulesPage() {
  const client = useQueryClient();
  const schedules = useQuery({
    queryKey: ['schedules'],
    queryFn: () => request<Schedule[]>('/v2/schedules'),
  });
  const act = useMutation({
    mutationFn: ({ id, action }: { id: string; action: 'pause' | 'resume' | 'delete' }) =>
      action === 'delete'
        ? request(`/v2/schedules/${segment(id, 'Schedule')}`, { method: 'DELETE' })
        : request(`/v2/schedules/${segment(id, 'Schedule')}/${action}`, { method: 'POST' }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['schedules'] }),
  });
  return (
    <section>
      <PageHeader title="Schedules" />
      <CreateSchedule />
      {act.isError && <ErrorBox error={act.error} what="change the schedule" />}
      {schedules.isPending ? (
        <Loading what="schedules" />
      ) : schedules.isError ? (
        <ErrorBox error={schedules.error} what="load the schedules" />
      ) : schedules.data.length === 0 ? (
        <Empty>No schedules yet. Create one above.</Empty>
      ) : (
        <div class="table-wrap">
          <table class="list" aria-label="Schedules">
            <thead>
              <tr>
                <th scope="col">Schedule</th>
                <th scope="col">Cron</th>
                <th scope="col">Destination</th>
                <th scope="col">State</th>
                <th scope="col">Last fired</th>
                <th scope="col">Next</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {schedules.data.map((s) => {
                const off = actionsOff('schedules', s.scheduleId);
                return (
                  <tr key={s.scheduleId}>
                    <td class="mono">{s.scheduleId}</td>
                    <td class="mono">{s.cron}</td>
                    <td class="mono clip" title={s.destination}>
                      {s.destination}
                    </td>
                    <td>{s.isPaused ? 'Paused' : 'Active'}</td>
                    <td class="nowrap">
                      <ScheduleTime ms={s.lastScheduleTime} cron={s.cron} />
                    </td>
                    <td class="nowrap">
                      {s.isPaused ? '' : <ScheduleTime ms={s.nextScheduleTime} cron={s.cron} />}
                    </td>
                    <td class="row-actions">
                      <PauseButton
                        paused={s.isPaused}
                        name={`schedule ${s.scheduleId}`}
                        off={off}
                        onToggle={(action) => act.mutate({ id: s.scheduleId, action })}
                      />
                      <ConfirmButton
                        label="Delete"
                        name={`Delete schedule ${s.scheduleId}`}
                        question={phrase`Delete schedule ${s.scheduleId}?`}
                        off={off}
                        onConfirm={() => act.mutate({ id: s.scheduleId, action: 'delete' })}
                      />
                      {off && <ActionsOff off={off} />}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function CreateSchedule() {
  const client = useQueryClient();
  const [cron, setCron] = useState('*/5 * * * *');
  const [zone, setZone] = useState('UTC');
  const preview = previewCron(cron, zone);
  const create = useMutation({
    mutationFn: async (form: FormData) => {
      const destination = formText(form, 'destination');
      if (!destination) throw new Error('Enter a destination URL or URL group name.');
      // Settings a header cannot carry go as query parameters (outgoing.ts).
      const out = outgoing();
      const spec = zone === 'UTC' ? cron.trim() : `CRON_TZ=${zone} ${cron.trim()}`;
      addSetting(out, await prefixed('Cron'), spec);
      addSetting(out, await prefixed('Method'), formText(form, 'method') || 'POST');
      const contentType = formText(form, 'contentType') || 'text/plain';
      addHeader(out, 'content-type', contentType, 'Content type');
      const retries = formText(form, 'retries');
      if (retries) addSetting(out, await prefixed('Retries'), retries);
      const label = formText(form, 'label');
      if (label) addSetting(out, await prefixed('Label'), label);
      // Encoded whole, as Publish does: the destination's own query (`?svc-retries=…`) and
      // fragment are part of it, not settings for Ferry.
      return request<{ scheduleId: string }>(
        `/v2/schedules/${segment(destination, 'Destination')}`,
        {
          method: 'POST',
          headers: out.headers,
          query: out.query,
          body: formRaw(form, 'body'),
        },
      );
    },
    onSuccess: () => client.invalidateQueries({ queryKey: ['schedules'] }),
  });
  return (
    <details class="panel" open>
      <summary>New schedule</summary>
      <form
        aria-label="New schedule"
        class="form-grid"
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate(new FormData(event.currentTarget));
        }}
      >
        <DestinationFields />
        <Field label="Cron">
          <input
            name="cron"
            class="mono"
            value={cron}
            onInput={(e) => setCron(e.currentTarget.value)}
            aria-describedby="cron-preview"
          />
        </Field>
        <Field label="Time zone">
          <select name="zone" value={zone} onChange={(e) => setZone(e.currentTarget.value)}>
            {timeZones().map((z) => (
              <option key={z} value={z}>
                {z}
              </option>
            ))}
          </select>
        </Field>
        <div id="cron-preview" class="cron-preview wide" aria-live="polite">
          {preview.ok ? (
            <>
              <span>Next five fire times ({zone}):</span>
              <ol aria-label="Next fire times">
                {preview.times.map((t) => (
                  <li key={t.getTime()}>{formatInZone(t, zone)}</li>
                ))}
              </ol>
            </>
          ) : (
            <span class="error-text" role="alert">
              Invalid cron expression: {preview.error}
            </span>
          )}
        </div>
        <Field label="Retries">
          <input name="retries" inputMode="numeric" />
        </Field>
        <Field label="Label">
          <input name="label" />
        </Field>
        <Field label="Content type">
          <input name="contentType" placeholder="text/plain" />
        </Field>
        <Field label="Body" wide>
          <textarea name="body" rows={3} />
        </Field>
        <div class="wide">
          <button type="submit" disabled={!preview.ok || create.isPending}>
            Create schedule
          </button>
        </div>
        {create.isSuccess && (
          <Notice>
            Created schedule <bdi>{create.data.scheduleId}</bdi>.
          </Notice>
        )}
        {create.isError && <ErrorBox error={create.error} what="create the schedule" />}
      </form>
    </details>
  );
}
