/**
 * Built-in admission plugins: the compiled-in admission of kube-apiserver and kcp (namespace
 * lifecycle, kcp's workspace, logical cluster, APIBinding and CRD-overlap plugins, CSR approval
 * and signing, resource quota) as one mechanism beside admission policies and webhooks. Each
 * plugin names the resources it admits; the chain (./index.ts `chainAdmission`) runs the
 * plugins of the written resource first, in the order given, then the dynamic steps.
 * Source: kube's admission.Interface (k8s.io/apiserver/pkg/admission/interfaces.go) and
 * kcp's plugin registry (pkg/admission/plugins.go).
 */
import type { KubeObject } from '../apimachinery/meta.js';
import type { UserInfo } from '../auth/user.js';
import type { WebhookAttributes } from '../registry/store.js';

/** What a built-in plugin sees of a create or update (kube's `admission.Attributes`, reduced). */
export interface AdmissionAttributes {
  operation: 'create' | 'update';
  /** Logical cluster of the object. */
  cluster: string;
  user: UserInfo;
  /** The stored object, on update. */
  old?: KubeObject;
  /** `status`, … when a subresource is written. */
  subresource?: string;
  /** Whether the write is a dry run (nothing is persisted: a plugin must hold no state for it). */
  dryRun?: boolean;
}

/** What a built-in plugin sees of a delete request. */
export interface DeleteAdmissionAttributes {
  /** Logical cluster of the object. */
  cluster: string;
  user: UserInfo;
}

/**
 * One built-in admission plugin. `admit` may default fields of the object in place and refuses a
 * write by throwing a StatusError (usually 403 Forbidden); it runs after the strategy's
 * prepareForCreate / prepareForUpdate, before the dynamic steps and schema validation. It should
 * read state from in-memory indexes; it may return a promise for the rare check that asks another
 * shard. `admitDelete` sees the stored object (read-only) of every delete request, dry runs and
 * already-terminating objects included, and refuses by throwing. `validate` is a validating
 * plugin that runs last, after schema validation and every dynamic step, on every write of its
 * resources, admission configurations included (kube's ResourceQuota).
 */
export interface AdmissionPlugin {
  /** kube's or kcp's name of the plugin, e.g. `NamespaceLifecycle`, `apis.kcp.io/APIBinding`. */
  name: string;
  /** The resources it admits, as `<group>/<plural>` (core group empty: `/namespaces`), or `*` for all. */
  resources: readonly string[];
  admit?(obj: KubeObject, attrs: AdmissionAttributes): void | Promise<void>;
  admitDelete?(obj: KubeObject, attrs: DeleteAdmissionAttributes): void;
  validate?(a: WebhookAttributes): Promise<void>;
  /**
   * A create this plugin's `validate` admitted was not written after all (the store failed it
   * afterwards: AlreadyExists, a missing namespace, a failed transaction): give back what was
   * charged for it. Synchronous; must not throw.
   */
  release?(a: WebhookAttributes): void;
}

/** The plugins of each resource, in the given order, indexed once. */
export class AdmissionPlugins {
  private readonly byResource = new Map<string, AdmissionPlugin[]>();

  constructor(plugins: readonly AdmissionPlugin[]) {
    for (const p of plugins) {
      for (const r of p.resources) {
        const list = this.byResource.get(r) ?? [];
        list.push(p);
        this.byResource.set(r, list);
      }
    }
  }

  /** The plugins of the written resource, in order: its own, then those of every resource (`*`). */
  private pluginsOf(a: WebhookAttributes): AdmissionPlugin[] {
    const own = this.byResource.get(`${a.desc.group}/${a.desc.plural}`);
    const all = this.byResource.get('*');
    return own && all ? [...own, ...all] : own ?? all ?? [];
  }

  /** The validating plugins (`validate`) of the written resource, in order. */
  async validate(a: WebhookAttributes): Promise<void> {
    for (const p of this.pluginsOf(a)) if (p.validate) await p.validate(a);
  }

  /** Tells the validating plugins of the written resource that an admitted create was not written. */
  release(a: WebhookAttributes): void {
    for (const p of this.pluginsOf(a)) p.release?.(a);
  }

  /** Runs the plugins of the written resource (create, update: `admit`; delete: `admitDelete`). */
  async admit(a: WebhookAttributes): Promise<void> {
    const plugins = this.pluginsOf(a);
    if (!plugins.length) return;
    if (a.operation === 'DELETE') {
      for (const p of plugins) p.admitDelete?.(a.oldObject!, { cluster: a.cluster, user: a.user });
      return;
    }
    const attrs: AdmissionAttributes = {
      operation: a.operation === 'CREATE' ? 'create' : 'update', cluster: a.cluster, user: a.user, dryRun: a.dryRun,
      ...(a.oldObject ? { old: a.oldObject } : {}), ...(a.subresource ? { subresource: a.subresource } : {}),
    };
    for (const p of plugins) if (p.admit) await p.admit(a.object!, attrs);
  }
}
