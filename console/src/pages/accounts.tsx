/**
 * Accounts (management sign-in): the messaging accounts the management user owns, with plan,
 * budget and a token reset that shows the new token once; an account's page shows its usage
 * (`GET /v2/queue/stats/{id}`). The list never shows tokens, though the API's answers carry them.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { request } from '../api';
import { ConfirmButton, Empty, ErrorBox, Field, Loading, PageHeader } from '../components';
import { formatTime } from '../format';
import { formText } from '../forms';
import { segment } from '../paths';
import type { Account } from '../types';
import { UsageView } from './usage';

const PLANS = ['free', 'paid'] as const;

/** A token shown once: after a reset or a creation, until the page is left. */
function NewToken(props: { account: Account; what: string }) {
  return (
    <div class="notice ok" role="status" aria-label="New token">
      <p>
        {props.what} for account <span class="mono">{props.account.id}</span>. Its token is shown
        this once; copy it now:
      </p>
      <pre class="body token">{props.account.token ?? ''}</pre>
    </div>
  );
}

function AccountRow(props: { account: Account; onToken: (account: Account) => void }) {
  const a = props.account;
  const client = useQueryClient();
  const done = (): Promise<void> => client.invalidateQueries({ queryKey: ['accounts'] });
  const plan = useMutation({
    mutationFn: (plan_name: string) =>
      request<Account>(`/v2/queue/set-plan/${segment(a.id, 'Account')}`, {
        method: 'POST',
        body: { plan_name },
      }),
    onSuccess: done,
  });
  const budget = useMutation({
    mutationFn: (value: number) =>
      request<Account>(`/v2/queue/update-budget/${segment(a.id, 'Account')}`, {
        method: 'PATCH',
        body: { budget: value },
      }),
    onSuccess: done,
  });
  const reset = useMutation({
    mutationFn: () =>
      request<Account>(`/v2/queue/rotate-token/${segment(a.id, 'Account')}`, { method: 'POST' }),
    onSuccess: (fresh) => {
      props.onToken(fresh);
      return done();
    },
  });
  const error = plan.error ?? budget.error ?? reset.error;
  return (
    <tr>
      <td class="mono">
        <Link href={`/accounts/${encodeURIComponent(a.id)}`}>{a.id}</Link>
      </td>
      <td>
        <select
          aria-label={`Plan of ${a.id}`}
          value={a.type}
          disabled={plan.isPending}
          onChange={(event) => plan.mutate(event.currentTarget.value)}
        >
          {PLANS.map((p) => (
            <option key={p}>{p}</option>
          ))}
        </select>
      </td>
      <td>
        <form
          class="row-actions"
          aria-label={`Budget of ${a.id}`}
          onSubmit={(event) => {
            event.preventDefault();
            budget.mutate(Number(formText(new FormData(event.currentTarget), 'budget')));
          }}
        >
          <input
            name="budget"
            type="number"
            min={0}
            step={1}
            class="narrow"
            aria-label={`Budget of ${a.id} in dollars (0: none)`}
            defaultValue={String(a.budget)}
          />
          <button type="submit" aria-label={`Save budget of ${a.id}`} disabled={budget.isPending}>
            Save
          </button>
        </form>
      </td>
      <td>{a.region}</td>
      <td class="nowrap">{a.creation_time ? formatTime(a.creation_time * 1000) : ''}</td>
      <td class="row-actions">
        <ConfirmButton
          label="Reset token"
          name={`Reset token of ${a.id}`}
          question="The old token stops working at once. Reset?"
          confirmLabel="Yes, reset"
          onConfirm={() => reset.mutate()}
        />
        {error ? <ErrorBox error={error} what="change the account" /> : null}
      </td>
    </tr>
  );
}

function CreateAccount(props: { onToken: (account: Account) => void }) {
  const client = useQueryClient();
  const create = useMutation({
    mutationFn: (body: { type: string; region: string }) =>
      request<Account>('/v2/queue', { method: 'POST', body }),
    onSuccess: (fresh) => {
      props.onToken(fresh);
      return client.invalidateQueries({ queryKey: ['accounts'] });
    },
  });
  return (
    <details class="panel">
      <summary>New account</summary>
      <form
        class="inline-form"
        aria-label="New account"
        onSubmit={(event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          create.mutate({ type: formText(form, 'type'), region: formText(form, 'region') });
        }}
      >
        <Field label="Plan">
          <select name="type">
            {PLANS.map((p) => (
              <option key={p}>{p}</option>
            ))}
          </select>
        </Field>
        <Field label="Region">
          <select name="region">
            <option>us-east-1</option>
            <option>eu-central-1</option>
          </select>
        </Field>
        <button type="submit" disabled={create.isPending}>
          Create account
        </button>
      </form>
      {create.isError && <ErrorBox error={create.error} what="create the account" />}
    </details>
  );
}

export function AccountsPage() {
  const accounts = useQuery({
    queryKey: ['accounts'],
    queryFn: () => request<Account[]>('/v2/queue'),
  });
  const [shown, setShown] = useState<{ account: Account; what: string }>();
  return (
    <section>
      <PageHeader title="Accounts" />
      <p class="muted">
        The messaging accounts you manage. A plan sets the account's limits; a budget (whole dollars
        a month, 0 for none) refuses publishes that would pass it.
      </p>
      {shown && <NewToken account={shown.account} what={shown.what} />}
      <CreateAccount onToken={(account) => setShown({ account, what: 'Created' })} />
      {accounts.isPending ? (
        <Loading what="accounts" />
      ) : accounts.isError ? (
        <ErrorBox error={accounts.error} what="load the accounts" />
      ) : accounts.data.length === 0 ? (
        <Empty>No accounts yet. Create one above.</Empty>
      ) : (
        <div class="table-wrap">
          <table class="list" aria-label="Accounts">
            <thead>
              <tr>
                <th scope="col">Account</th>
                <th scope="col">Plan</th>
                <th scope="col">Budget ($)</th>
                <th scope="col">Region</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {accounts.data.map((a) => (
                <AccountRow
                  key={a.id}
                  account={a}
                  onToken={(account) => setShown({ account, what: 'Token reset' })}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export function AccountUsagePage(props: { id: string }) {
  return (
    <section>
      <PageHeader
        title={
          <>
            Usage of account <bdi>{props.id}</bdi>
          </>
        }
      >
        <Link href="/accounts">All accounts</Link>
      </PageHeader>
      <UsageView
        // From this page's own URL path, which can hold no `.` or `..` segment.
        path={`/v2/queue/stats/${encodeURIComponent(props.id)}`}
        queryKey={['accounts', 'stats', props.id]}
      />
    </section>
  );
}
