/**
 * CRD conversion webhooks (`spec.conversion.strategy: Webhook`), with kube-apiserver's semantics
 * (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/#webhook-conversion;
 * k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go):
 *
 * - one `ConversionReview` (apiextensions.k8s.io, the first of the CRD's
 *   `conversionReviewVersions` this server speaks: v1 or v1beta1) carries every object of a
 *   read or write that is not in the desired version yet — a list is one call, not one per item;
 *   objects already in the desired version are not sent;
 * - the answer must carry the request's uid, `result.status: Success`, and as many
 *   `convertedObjects`, in order, each of the desired apiVersion and the same kind;
 * - a webhook may change only labels and annotations of `metadata`: everything else is put back
 *   from the original (kube's `restoreObjectMeta`);
 * - converted objects are pruned and defaulted by the desired version's schema, as kube's
 *   schema-coercing converter does;
 * - any failure rejects with 500 InternalError `conversion webhook for <group/version, Kind=…>
 *   failed: …` (kube answers conversion failures as internal errors); the timeout is kube's 30 s.
 */
import { randomUUID } from 'node:crypto';
import { StatusError } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { postJSON, webhookEndpoint, type WebhookEndpoint } from '../apimachinery/webhookclient.js';
import { asObj } from '../apimachinery/objects.js';

type Obj = Record<string, unknown>;

/** Conversion webhook calls time out after 30 s (kube's webhook converter). */
const CONVERSION_TIMEOUT_MS = 30_000;

/** ConversionReview versions this server speaks, in its preference order (same shape). */
const REVIEW_VERSIONS = ['v1', 'v1beta1'];

/** Batched, asynchronous conversion of a resource's objects between its versions. */
export interface AsyncConverter {
  /**
   * The objects in `apiVersion` (`<group>/<version>`), in order; objects already in it are
   * returned as they are. Rejects with a StatusError (500 InternalError) when conversion fails.
   */
  convert(objs: readonly KubeObject[], apiVersion: string): Promise<KubeObject[]>;
}

/** Labels and annotations a webhook returns must be string maps (kube validates them). */
function stringMap(v: unknown, field: string): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined;
  const m = asObj(v);
  if (m !== v || Object.values(m).some((x) => typeof x !== 'string')) throw new Error(`invalid ${field}: must be a map of strings`);
  return m as Record<string, string>;
}

/**
 * The conversion webhook of one CRD (one generation of its spec): `kind` is the CRD's kind,
 * `webhook` its `spec.conversion.webhook`, `normalize` prunes and defaults an object by the
 * schema of a version name (what the CRD's descriptors use on write). Throws a TypeError when
 * the webhook URL does not parse (CRD validation refuses such URLs first).
 */
export class WebhookConverter implements AsyncConverter {
  private readonly endpoint: WebhookEndpoint;
  private readonly reviewVersion: string;

  constructor(
    private readonly kind: string,
    webhook: Obj,
    private readonly normalize: (version: string, obj: KubeObject) => void,
  ) {
    this.endpoint = webhookEndpoint(webhook.clientConfig);
    const wanted = Array.isArray(webhook.conversionReviewVersions) ? webhook.conversionReviewVersions.map(String) : [];
    this.reviewVersion = wanted.find((v) => REVIEW_VERSIONS.includes(v)) ?? 'v1';
  }

  async convert(objs: readonly KubeObject[], apiVersion: string): Promise<KubeObject[]> {
    const pending = objs.map((o, i) => ({ o, i })).filter(({ o }) => o.apiVersion !== apiVersion);
    if (!pending.length) return [...objs];
    const from = pending[0]!.o.apiVersion;
    try {
      const converted = await this.call(pending.map(({ o }) => o), apiVersion);
      const out = [...objs];
      const version = apiVersion.slice(apiVersion.indexOf('/') + 1);
      pending.forEach(({ o, i }, j) => {
        const c = this.restoreMetadata(o, converted[j]!, j, apiVersion);
        this.normalize(version, c);
        out[i] = c;
      });
      return out;
    } catch (err) {
      throw new StatusError(500, 'InternalError', `Internal error occurred: conversion webhook for ${from}, Kind=${this.kind} failed: ${(err as Error).message}`);
    }
  }

  /** One ConversionReview round trip; resolves to `convertedObjects` (checked for count and uid). */
  private async call(objects: KubeObject[], desiredAPIVersion: string): Promise<Obj[]> {
    const uid = randomUUID();
    const review = {
      apiVersion: `apiextensions.k8s.io/${this.reviewVersion}`, kind: 'ConversionReview',
      request: { uid, desiredAPIVersion, objects },
    };
    const answer = await postJSON(this.endpoint, review, CONVERSION_TIMEOUT_MS);
    const response = answer.response;
    if (answer.kind !== 'ConversionReview' || !response || typeof response !== 'object') throw new Error('the response is not a ConversionReview with a response');
    const r = response as Obj;
    if (r.uid !== uid) throw new Error(`expected response uid ${JSON.stringify(uid)}, got ${JSON.stringify(r.uid ?? '')}`);
    const result = asObj(r.result);
    if (result.status !== 'Success') {
      throw new Error(`conversion webhook returned failure status: ${String(result.message ?? result.reason ?? 'no message')}`);
    }
    const converted = Array.isArray(r.convertedObjects) ? r.convertedObjects as Obj[] : [];
    if (converted.length !== objects.length) throw new Error(`returned ${converted.length} objects, expected ${objects.length}`);
    return converted;
  }

  /**
   * The converted object with the original's metadata, except labels and annotations the webhook
   * may change (kube's `restoreObjectMeta`); its apiVersion and kind checked.
   */
  private restoreMetadata(original: KubeObject, converted: Obj, index: number, apiVersion: string): KubeObject {
    if (!converted || typeof converted !== 'object' || Array.isArray(converted)) throw new Error(`invalid converted object at index ${index}: not an object`);
    if (converted.apiVersion !== apiVersion) throw new Error(`invalid converted object at index ${index}: invalid apiVersion ${JSON.stringify(converted.apiVersion ?? '')}, expected ${JSON.stringify(apiVersion)}`);
    if (converted.kind !== original.kind) throw new Error(`invalid converted object at index ${index}: invalid kind ${JSON.stringify(converted.kind ?? '')}, expected ${JSON.stringify(original.kind)}`);
    const meta = converted.metadata;
    if (meta !== undefined && (meta === null || typeof meta !== 'object' || Array.isArray(meta))) throw new Error(`invalid converted object at index ${index}: metadata must be an object`);
    const m = asObj(meta);
    const labels = stringMap(m.labels, `metadata.labels of converted object at index ${index}`);
    const annotations = stringMap(m.annotations, `metadata.annotations of converted object at index ${index}`);
    const restored = structuredClone(original.metadata);
    if (labels && Object.keys(labels).length) restored.labels = labels; else delete restored.labels;
    if (annotations && Object.keys(annotations).length) restored.annotations = annotations; else delete restored.annotations;
    return { ...(converted as KubeObject), metadata: restored };
  }
}

/** Whether a CRD converts its versions with a webhook. */
export function usesConversionWebhook(crd: KubeObject): boolean {
  return asObj(asObj(crd.spec).conversion).strategy === 'Webhook';
}
