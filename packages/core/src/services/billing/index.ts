export { BillingService, type BillingOptions } from './BillingService.js';
export { Ledger, ledgerKeys, type AuditReport, type Balances } from './Ledger.js';
export {
  PreferencesStore,
  DEFAULT_PREFERENCES,
  type UserPreferences,
  type PreferencesUpdate,
  type ByokProviderPreference,
} from './PreferencesStore.js';
export { planConsumption, type ConsumptionPlan, type PlanStep } from './planConsumption.js';
export { platformFee, withFee } from './fee.js';
export type { ReconcileReport } from './reconcile.js';
export {
  verifyPurchaseWebhook,
  handlePurchaseWebhook,
  PurchaseEventSchema,
  PURCHASE_EVENT_TYPE,
  type VerifyPurchaseWebhookOptions,
  type PurchaseEvent,
  type PurchaseWebhookResult,
  type PurchaseWebhookDeps,
} from './purchaseWebhook.js';
export {
  BALANCE_TYPES,
  DEFAULT_CONSUMPTION_ORDER,
  type BalanceType,
  type ConsumptionSource,
  type LedgerLine,
  type LedgerEntry,
  type LedgerEntryKind,
  type UsageRecord,
  // The AI service sees reservations as opaque (`Reservation` of services/ai); this is their shape.
  type Reservation as TokenReservation,
  type CreditParams,
  type CreditResult,
  type BillingEventMap,
  type BudgetAlertSink,
} from './types.js';
export { Budgets, budgetKeys, type BudgetRecord, type BudgetView, type BudgetPeriodView } from './Budgets.js';
export type { AdminAnalytics, AdminAnalyticsOptions, UsageGroup } from './adminUsageAnalytics.js';
