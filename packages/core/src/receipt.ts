import { type KubeClients, kubeCall, serverSideApply, statusOf } from '@baton/kube';

/** Name of the receipt ConfigMap in the baton namespace. */
export const RECEIPT_NAME = 'baton-receipt';

/** What the cluster itself carries about its last handoff. Secret-free by construction. */
export interface Receipt {
  readonly runId: string;
  readonly outcome: string;
  readonly revision: string;
  readonly recordedAt: string;
  readonly credentialFingerprint: string;
  readonly auditEventId: string;
  readonly auditEventDigest: string;
  readonly auditLogIndex: string;
  readonly auditCheckpoint: string;
  /** The run that wrote this receipt for a run killed after the takeover (it minted and pushed nothing). */
  readonly completedBy?: string;
  /** How the credential's death was shown, when not by the usual 401 + TokenReview proof. */
  readonly revocationProof?: string;
}

/**
 * Writes the receipt ConfigMap (server-side apply, field manager `baton`) and a Kubernetes Event on it.
 * @throws {KubeApiError} naming the object.
 */
export async function writeReceipt(
  operator: KubeClients,
  namespace: string,
  receipt: Receipt,
  now: Date,
): Promise<void> {
  const [cm] = await serverSideApply(
    operator,
    [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: RECEIPT_NAME, namespace, labels: { 'app.kubernetes.io/managed-by': 'baton' } },
        data: { ...receipt },
      },
    ],
    { fieldManager: 'baton', force: true },
  );
  const handedOff = receipt.outcome === 'handed-off';
  await kubeCall(`create Event for ConfigMap ${namespace}/${RECEIPT_NAME}`, () =>
    operator.core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { generateName: `${RECEIPT_NAME}.`, namespace },
        involvedObject: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          name: RECEIPT_NAME,
          namespace,
          uid: String(cm?.metadata.uid ?? ''),
        },
        reason: handedOff ? 'HandedOff' : 'HandoffFailed',
        message: `handoff ${receipt.runId} ${receipt.outcome} at revision ${receipt.revision}; audit event ${receipt.auditEventId} at log index ${receipt.auditLogIndex}`,
        type: handedOff ? 'Normal' : 'Warning',
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        source: { component: 'baton' },
        reportingComponent: 'baton.dev/handoff',
        reportingInstance: receipt.runId,
      },
    }),
  );
}

/**
 * Reads the receipt, or undefined when the cluster has none.
 * @throws {KubeApiError} when the read fails otherwise.
 */
export async function readReceipt(operator: KubeClients, namespace: string): Promise<Receipt | undefined> {
  try {
    const cm = await operator.core.readNamespacedConfigMap({ namespace, name: RECEIPT_NAME });
    return cm.data as unknown as Receipt;
  } catch (err) {
    if (statusOf(err) === 404) return undefined;
    return kubeCall(`read ConfigMap ${namespace}/${RECEIPT_NAME}`, () => Promise.reject(err));
  }
}
