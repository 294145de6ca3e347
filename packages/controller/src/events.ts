import type { Clock } from '@baton/core/clock';
import type { Logger } from 'pino';
import { kubeTime } from './conditions.js';
import { GITSYNC_API_VERSION, type GitSync } from './gitsync.js';
import type { KubeClient } from './kube-client.js';

/** Collaborators of an {@link EventRecorder}. */
export interface EventRecorderDeps {
  /** Client the Events are created with (the controller's leadership-fenced one). */
  readonly kube: KubeClient;
  readonly log: Logger;
  readonly clock: Clock;
  /** Namespace of the GitSync, where its Events go. */
  readonly namespace: string;
  /** Name of the GitSync the Events are about. */
  readonly gitSyncName: string;
  /** This replica's identity, recorded as `reportingInstance`. */
  readonly identity: string;
}

/** Records Kubernetes Events about the GitSync (`kubectl describe gitsync` shows them). */
export class EventRecorder {
  private readonly d: EventRecorderDeps;
  private counter = 0;
  private last = '';

  constructor(deps: EventRecorderDeps) {
    this.d = deps;
  }

  /**
   * Creates one Event, unless it repeats the last one. Never throws: a lost Event is logged, the sync goes on.
   * @param message cut to 1 024 characters.
   */
  async record(gs: GitSync, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    // Repeating the same failure every retry would flood the namespace: one event per new message.
    const key = `${type}/${reason}/${message}`;
    if (key === this.last) return;
    this.last = key;
    const { namespace, gitSyncName, identity, clock } = this.d;
    const now = kubeTime(clock.now());
    try {
      await this.d.kube.call('POST', `/api/v1/namespaces/${namespace}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: {
          name: `${gitSyncName}.${clock.now().getTime().toString(16)}${(++this.counter).toString(16)}`,
          namespace,
        },
        involvedObject: {
          apiVersion: GITSYNC_API_VERSION,
          kind: 'GitSync',
          name: gitSyncName,
          namespace,
          uid: gs.metadata.uid,
          resourceVersion: gs.metadata.resourceVersion,
        },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component: 'baton-controller' },
        reportingComponent: 'baton-controller',
        reportingInstance: identity,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      });
    } catch (err) {
      this.d.log.warn({ err: (err as Error).message }, 'event not recorded');
    }
  }
}
