import { ENDPOINTS, type DeliveryStore, type EndpointDoc } from './deliveryStore.ts';

/** One endpoint's deliveries as `GET /metrics` reports them. */
export interface EndpointQueueStats {
  endpointId: string;
  /** Deliveries not final yet: due, waiting for a retry, or waiting behind an earlier one of their voucher. */
  pending: number;
  /** Deliveries that failed for good and are still kept (deliveries are kept 30 days). */
  failed: number;
}

/**
 * Pending and failed deliveries per endpoint (deleted endpoints left out), counted in the
 * deliveries store, which is the truth whichever process makes the attempts. An environment has
 * at most 16 endpoints, so this is at most 32 counts on the store's (endpoint_id, status) index.
 */
export const webhookQueueStats = async (deliveries: DeliveryStore): Promise<EndpointQueueStats[]> => {
  const endpoints = await deliveries.store.find<EndpointDoc>(ENDPOINTS, {}, { limit: 1_000 });
  const live = endpoints.filter((endpoint) => !endpoint.deleted);
  return Promise.all(
    live.map(async (endpoint) => ({
      endpointId: endpoint.id,
      pending: await deliveries.count({ endpoint_id: endpoint.id, status: 'pending' }),
      failed: await deliveries.count({ endpoint_id: endpoint.id, status: 'failed' }),
    })),
  );
};
