/**
 * Overview: what the account's messages did per minute over the last hour (published,
 * delivered, failed, retried) and where they are now (waiting, in flight, in the DLQ), from
 * Ferry's metering (`GET /v2/usage?period=1h`, `GET /v2/usage/now`), refreshed every 5 seconds.
 */
import { useQuery } from '@tanstack/preact-query';
import { useMemo } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { request } from '../api';
import { Chart, statsTime } from '../charts/chart';
import { ErrorBox, Loading, PageHeader } from '../components';
import { formatTime } from '../format';
import type { UsageNow, UsageStats } from '../types';

const REFRESH_MS = 5_000;

const SERIES = [
  ['published', '#1f5fbf'],
  ['delivered', '#067647'],
  ['failed', '#b42318'],
  ['retried', '#b54708'],
] as const;

function count(n: number, limit: number): string {
  return n >= limit ? `${limit.toLocaleString()}+` : n.toLocaleString();
}

function Figure(props: { label: string; value: string; href?: string }) {
  return (
    <div>
      <dt>{props.label}</dt>
      <dd>{props.href ? <Link href={props.href}>{props.value}</Link> : props.value}</dd>
    </div>
  );
}

function LastHour(props: { stats: UsageStats }) {
  const s = props.stats;
  const chart = useMemo(() => {
    const byId = new Map(s.daily_queue_messages.map((q) => [q.id, q.data_points]));
    const points = (name: string) =>
      (name === 'published' ? s.daily_used : (byId.get(name) ?? [])).map((p) => p.y);
    return {
      xs: s.daily_used.map((p) => statsTime(p.x)),
      series: SERIES.map(([label, color]) => ({ label, color, values: points(label) })),
    };
  }, [s]);
  const total = (label: string): number =>
    chart.series.find((x) => x.label === label)?.values.reduce((a, b) => a + b, 0) ?? 0;
  const lastMinute = (label: string): number => {
    const values = chart.series.find((x) => x.label === label)?.values ?? [];
    return values[values.length - 1] ?? 0;
  };
  return (
    <>
      <dl class="figures" aria-label="Last hour">
        {SERIES.map(([label]) => (
          <Figure
            key={label}
            label={`${label[0]?.toUpperCase() ?? ''}${label.slice(1)} in the last hour`}
            value={`${total(label).toLocaleString()} (${lastMinute(label)} this minute)`}
          />
        ))}
      </dl>
      <Chart title="Messages per minute, last hour" xs={chart.xs} series={chart.series} />
    </>
  );
}

export function OverviewPage() {
  const stats = useQuery({
    queryKey: ['usage', 'overview'],
    queryFn: () => request<UsageStats>('/v2/usage', { query: { period: '1h' } }),
    refetchInterval: REFRESH_MS,
  });
  const now = useQuery({
    queryKey: ['usage', 'now'],
    queryFn: () => request<UsageNow>('/v2/usage/now'),
    refetchInterval: REFRESH_MS,
  });
  return (
    <section>
      <PageHeader title="Overview">
        <span class="muted" role="status">
          {now.dataUpdatedAt ? `Updated ${formatTime(now.dataUpdatedAt)}` : ''}
        </span>
      </PageHeader>
      <h2>Now</h2>
      {now.isPending ? (
        <Loading what="the message counts" />
      ) : now.isError ? (
        <ErrorBox error={now.error} what="load the message counts" />
      ) : (
        <dl class="figures" aria-label="Now">
          <Figure
            label="Waiting (due or delayed)"
            value={count(now.data.due + now.data.delayed, now.data.limit)}
            href="/messages?state=DUE&state=DELAYED"
          />
          <Figure
            label="Waiting behind flow control"
            value={count(now.data.waiting, now.data.limit)}
            href="/flow-control"
          />
          <Figure
            label="In flight"
            value={count(now.data.inFlight, now.data.limit)}
            href="/messages?state=ACTIVE"
          />
          <Figure label="In the DLQ" value={now.data.dlq.toLocaleString()} href="/dlq" />
          <Figure
            label="Workflow DLQ"
            value={count(now.data.workflowDlq, now.data.limit)}
            href="/workflows?view=dlq"
          />
        </dl>
      )}
      <h2>Last hour, per minute</h2>
      {stats.isPending ? (
        <Loading what="the last hour" />
      ) : stats.isError ? (
        <ErrorBox error={stats.error} what="load the last hour" />
      ) : (
        <LastHour stats={stats.data} />
      )}
    </section>
  );
}
