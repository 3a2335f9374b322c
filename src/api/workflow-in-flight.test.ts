/**
 * A running run's message its history does not name, as the logs' `next` group shows it: a
 * call's step and what it calls (its body as text or base64, cut, redacted with or without a
 * hash), its callback's step, a wait's step; nothing for a history message.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Redaction } from '../core/redaction.js';
import type { Message } from '../core/types.js';
import type { MessageWorkflow } from '../core/workflow.js';
import { makeMessage } from '../storage/conformance/fixtures.js';
import { inFlightFields } from './workflow-in-flight.js';

const workflow = (callType: MessageWorkflow['callType']): MessageWorkflow => ({
  runId: 'wfr_1',
  url: 'https://app.example.com/wf',
  createdAt: 1,
  callType,
});
const stepHeaders = {
  'Svc-Workflow-StepId': ['3'],
  'Svc-Workflow-StepName': ['charge'],
  'Svc-Workflow-StepType': ['Call'],
  'Svc-Workflow-Concurrent': ['1'],
};
const call = (body: Uint8Array): Message =>
  makeMessage('acct_1', {
    url: 'https://pay.example.com/charge',
    spec: {
      method: 'PUT',
      headers: { 'X-Key': ['secret'], 'X-Plain': ['p'] },
      callback: { url: 'https://app.example.com/wf', method: 'POST', headers: stepHeaders },
      workflow: workflow('toCallback'),
    },
    body,
  });
const identity = { stepId: 3, stepName: 'charge', stepType: 'Call', concurrent: 1 };
const sha = (text: string) => `REDACTED:${createHash('sha256').update(text).digest('hex')}`;

describe('inFlightFields', () => {
  it('shows a call on its way: its step, URL, method, headers and body', () => {
    const message = call(Buffer.from('{"amount":5}'));
    expect(inFlightFields({ message, inHistory: false, errors: [] }, undefined, 'Svc')).toEqual({
      ...identity,
      callType: 'toCallback',
      createdAt: message.createdAt,
      callUrl: 'https://pay.example.com/charge',
      callMethod: 'PUT',
      callHeaders: { 'X-Key': ['secret'], 'X-Plain': ['p'] },
      callBody: '{"amount":5}',
    });
  });

  it('cuts the body as the list cut it; a body that is not UTF-8 is base64', () => {
    const cut = inFlightFields(
      {
        message: call(Buffer.from('{"a":"é').subarray(0, 7)),
        inHistory: false,
        bodySize: 40,
        errors: [],
      },
      undefined,
      'Svc',
    );
    // The cut fell inside `é`: the partial character is left out.
    expect(cut).toMatchObject({ callBody: '{"a":"', callBodyTruncated: true, callBodySize: 40 });
    const binary = inFlightFields(
      { message: call(new Uint8Array([0xff, 0x00])), inHistory: false, errors: [] },
      undefined,
      'Svc',
    );
    expect(binary).toMatchObject({ callBodyBase64: '/wA=' });
    expect(binary.callBody).toBeUndefined();
  });

  it('redacts the body and the covered headers as the run asks; a cut body without a hash', () => {
    const redaction: Redaction = { body: true, headers: ['x-key'] };
    const whole = inFlightFields(
      { message: call(Buffer.from('{"card":1}')), inHistory: false, errors: [] },
      redaction,
      'Svc',
    );
    expect(whole).toMatchObject({
      callBody: sha('{"card":1}'),
      callHeaders: { 'X-Key': [sha('secret')], 'X-Plain': ['p'] },
    });
    const cut = inFlightFields(
      { message: call(Buffer.from('{"card":1}')), inHistory: false, bodySize: 99, errors: [] },
      redaction,
      'Svc',
    );
    expect(cut).toMatchObject({ callBody: 'REDACTED', callBodyTruncated: true });
  });

  it('names the step of a callback bringing the response back and of a wait’s timeout', () => {
    const back = makeMessage('acct_1', {
      spec: { method: 'POST', headers: stepHeaders, workflow: workflow('fromCallback') },
    });
    expect(
      inFlightFields({ message: back, inHistory: false, errors: [] }, undefined, 'Svc'),
    ).toEqual({ ...identity, callType: 'fromCallback', createdAt: back.createdAt });
    const wait = makeMessage('acct_1', {
      spec: { method: 'POST', headers: {}, workflow: { ...workflow('step'), waitFor: 'paid' } },
      body: Buffer.from(
        JSON.stringify({
          stepId: 2,
          stepName: 'w',
          stepType: 'Wait',
          concurrent: 1,
          waitTimeout: true,
        }),
      ),
    });
    expect(
      inFlightFields({ message: wait, inHistory: false, errors: [] }, undefined, 'Svc'),
    ).toEqual({
      stepId: 2,
      stepName: 'w',
      stepType: 'Wait',
      concurrent: 1,
      callType: 'step',
      createdAt: wait.createdAt,
    });
    // Once in the history (the timeout came first), its entry there shows it.
    expect(
      inFlightFields({ message: wait, inHistory: true, errors: [] }, undefined, 'Svc'),
    ).toEqual({});
  });
});
