/** URL groups: list; a group's endpoints (add, remove), default headers (edit), delete. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { request } from '../api';
import { formText } from '../forms';
import {
  ActionsOff,
  actionsOff,
  ConfirmButton,
  Empty,
  ErrorBox,
  Field,
  Loading,
  Notice,
  PageHeader,
  phrase,
} from '../components';
import { segment } from '../paths';
import type { HeaderMap, UrlGroup } from '../types';

/** @throws Error for a name no URL path can carry (paths.ts), before any request. */
const groupPath = (name: string): string => `/v2/topics/${segment(name, 'URL group')}`;

export function UrlGroupsPage() {
  const groups = useQuery({
    queryKey: ['url-groups'],
    queryFn: () => request<UrlGroup[]>('/v2/topics'),
  });
  return (
    <section>
      <PageHeader title="URL groups" />
      <AddEndpoint />
      {groups.isPending ? (
        <Loading what="URL groups" />
      ) : groups.isError ? (
        <ErrorBox error={groups.error} what="load the URL groups" />
      ) : groups.data.length === 0 ? (
        <Empty>No URL groups yet. Adding an endpoint to a new name creates the group.</Empty>
      ) : (
        <div class="table-wrap">
          <table class="list" aria-label="URL groups">
            <thead>
              <tr>
                <th scope="col">Group</th>
                <th scope="col">Endpoints</th>
                <th scope="col">Default headers</th>
              </tr>
            </thead>
            <tbody>
              {groups.data.map((g) => {
                const off = actionsOff('groups', g.name);
                return (
                  <tr key={g.name}>
                    <td class="wrap">
                      {off ? (
                        <>
                          <span aria-describedby={off.id}>{g.name}</span> <ActionsOff off={off} />
                        </>
                      ) : (
                        <Link href={`/url-groups/${encodeURIComponent(g.name)}`}>{g.name}</Link>
                      )}
                    </td>
                    <td>{g.endpoints.length}</td>
                    <td>{Object.keys(g.headers ?? {}).length}</td>
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

/** Adds an endpoint to a group (creating the group when the name is new). */
function AddEndpoint(props: { group?: string }) {
  const client = useQueryClient();
  const add = useMutation({
    mutationFn: (form: FormData) => {
      const group = props.group ?? formText(form, 'group');
      const url = formText(form, 'url');
      const name = formText(form, 'name');
      return request(`${groupPath(group)}/endpoints`, {
        method: 'POST',
        body: { endpoints: [{ url, ...(name ? { name } : {}) }] },
      });
    },
    onSuccess: () => client.invalidateQueries({ queryKey: ['url-groups'] }),
  });
  return (
    <form
      aria-label="Add endpoint"
      class="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        const form = event.currentTarget;
        add.mutate(new FormData(form), { onSuccess: () => form.reset() });
      }}
    >
      {!props.group && (
        <Field label="Group">
          <input name="group" required />
        </Field>
      )}
      <Field label="Endpoint URL">
        <input name="url" required placeholder="https://example.com/hook" />
      </Field>
      <Field label="Endpoint name">
        <input name="name" />
      </Field>
      <button type="submit" disabled={add.isPending}>
        Add endpoint
      </button>
      {add.isError && <ErrorBox error={add.error} what="add the endpoint" />}
    </form>
  );
}

export function UrlGroupPage(props: { name: string }) {
  const client = useQueryClient();
  const [, navigate] = useLocation();
  const group = useQuery({
    queryKey: ['url-groups', props.name],
    queryFn: () => request<UrlGroup>(groupPath(props.name)),
  });
  const removeEndpoint = useMutation({
    mutationFn: (endpoint: { url: string; name?: string }) =>
      request(`${groupPath(props.name)}/endpoints`, {
        method: 'DELETE',
        body: { endpoints: [endpoint] },
      }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['url-groups'] }),
  });
  const removeGroup = useMutation({
    mutationFn: () => request(groupPath(props.name), { method: 'DELETE' }),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: ['url-groups'] });
      navigate('/url-groups');
    },
  });
  return (
    <section>
      <PageHeader
        title={
          <>
            URL group <bdi>{props.name}</bdi>
          </>
        }
      >
        <Link href="/url-groups">All URL groups</Link>
        <ConfirmButton
          label="Delete group"
          question={phrase`Delete the group ${props.name} and its endpoints?`}
          confirmLabel="Yes, delete the group"
          onConfirm={() => removeGroup.mutate()}
        />
      </PageHeader>
      {removeGroup.isError && <ErrorBox error={removeGroup.error} what="delete the group" />}
      {group.isPending ? (
        <Loading what="the group" />
      ) : group.isError ? (
        <ErrorBox error={group.error} what="load the group" />
      ) : (
        <>
          <h2>Endpoints</h2>
          <div class="table-wrap">
            <table class="list" aria-label="Endpoints">
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Name</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {group.data.endpoints.map((e) => (
                  <tr key={`${e.url}|${e.name ?? ''}`}>
                    <td class="mono clip" title={e.url}>
                      {e.url}
                    </td>
                    <td class="wrap">{e.name ?? ''}</td>
                    <td class="row-actions">
                      <ConfirmButton
                        label="Remove"
                        name={`Remove endpoint ${e.name ?? e.url}`}
                        question={phrase`Remove ${e.name ?? e.url}?`}
                        onConfirm={() =>
                          removeEndpoint.mutate({ url: e.url, ...(e.name ? { name: e.name } : {}) })
                        }
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {removeEndpoint.isError && (
            <ErrorBox error={removeEndpoint.error} what="remove the endpoint" />
          )}
          <AddEndpoint group={props.name} />
          <h2>Default headers</h2>
          <p class="muted">
            Sent with every message published to this group, as if the publisher had sent them.
          </p>
          <HeadersEditor key={props.name} name={props.name} headers={group.data.headers} />
        </>
      )}
    </section>
  );
}

type Row = { name: string; value: string };

function rowsOf(headers: HeaderMap | undefined): Row[] {
  return Object.entries(headers ?? {}).flatMap(([name, values]) =>
    values.map((value) => ({ name, value })),
  );
}

function HeadersEditor(props: { name: string; headers?: HeaderMap }) {
  const client = useQueryClient();
  const [rows, setRows] = useState<Row[]>(() => {
    const initial = rowsOf(props.headers);
    return initial.length ? initial : [{ name: '', value: '' }];
  });
  const save = useMutation({
    mutationFn: () => {
      const headers: Record<string, string[]> = {};
      for (const row of rows) {
        const name = row.name.trim();
        if (name) (headers[name] ??= []).push(row.value);
      }
      return request<UrlGroup>(groupPath(props.name), { method: 'PATCH', body: { headers } });
    },
    onSuccess: () => client.invalidateQueries({ queryKey: ['url-groups'] }),
  });
  const update = (i: number, patch: Partial<Row>): void =>
    setRows(rows.map((row, j) => (j === i ? { ...row, ...patch } : row)));
  return (
    <form
      aria-label="Default headers"
      onSubmit={(event) => {
        event.preventDefault();
        save.mutate();
      }}
    >
      {rows.map((row, i) => (
        <div class="header-row" key={i}>
          <Field label={`Header ${i + 1} name`}>
            <input value={row.name} onInput={(e) => update(i, { name: e.currentTarget.value })} />
          </Field>
          <Field label={`Header ${i + 1} value`}>
            <input value={row.value} onInput={(e) => update(i, { value: e.currentTarget.value })} />
          </Field>
          <button
            type="button"
            aria-label={`Remove header ${i + 1}`}
            onClick={() => setRows(rows.filter((_, j) => j !== i))}
          >
            Remove
          </button>
        </div>
      ))}
      <div class="actions">
        <button type="button" onClick={() => setRows([...rows, { name: '', value: '' }])}>
          Add header
        </button>
        <button type="submit" disabled={save.isPending}>
          Save headers
        </button>
      </div>
      {save.isSuccess && <Notice>Default headers saved.</Notice>}
      {save.isError && <ErrorBox error={save.error} what="save the headers" />}
    </form>
  );
}
