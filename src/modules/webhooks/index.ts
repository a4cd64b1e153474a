import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../../http'
import { rejectUnknownFields } from '../../edge/strict-body'
import type { Services } from '../../services'
import { DeliveriesQuery, DeliveryList, EventList, EventsQuery, Webhook, WebhookPut, WebhookSaved } from './model'
import { deleteWebhook, getWebhook, listEvents, pageLimit, putWebhook, recentDeliveries } from '../../events/webhook-endpoints'

/** Operator-only: an agent token cannot redirect or read the owner's notifications. */
export const webhookRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    .put(
      '/v1/webhooks',
      async (c) => {
        const principal = await h.admitIn(c)
        const { body } = c
        return putWebhook(s, principal.accountId, body)
      },
      {
        parse: h.json,
        body: WebhookPut,
        transform: rejectUnknownFields(WebhookPut),
        response: { 200: WebhookSaved },
        detail: { summary: "Set the account's webhook endpoint and the event types it wants; the signing secret is shown once, when generated" },
      },
    )
    .get(
      '/v1/webhooks',
      async (c) => {
        const principal = await h.admitIn(c)
        return getWebhook(s, principal.accountId)
      },
      { response: { 200: Webhook }, detail: { summary: "The account's webhook endpoint (never its secret)" } },
    )
    .delete(
      '/v1/webhooks',
      async (c) => {
        const { principal, headers } = await h.admitted(c)
        await deleteWebhook(s, principal.accountId)
        return new Response(null, { status: 204, headers })
      },
      { detail: { summary: 'Remove the webhook endpoint (204); its pending deliveries are cancelled' } },
    )
    .get(
      '/v1/webhooks/deliveries',
      async (c) => {
        const principal = await h.admitIn(c)
        const { query } = c
        return recentDeliveries(s, principal.accountId, pageLimit(query.limit))
      },
      {
        query: DeliveriesQuery,
        response: { 200: DeliveryList },
        detail: { summary: 'Recent webhook deliveries, newest first: status, attempts, next retry (backoff for a day), last response code' },
      },
    )
    .get(
      '/v1/events',
      async (c) => {
        const principal = await h.admitIn(c)
        const { query } = c
        return listEvents(s, principal.accountId, pageLimit(query.limit), query.cursor)
      },
      { query: EventsQuery, response: { 200: EventList }, detail: { summary: "The account's owner events, newest first (the same events webhooks and the chat receive)" } },
    )
