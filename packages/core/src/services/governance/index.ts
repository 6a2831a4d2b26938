export { AlertOutbox, type AlertDelivery, type AlertEvent } from './AlertOutbox.js';
export { signAlert, verifyAlertSignature, ALERT_SIGNATURE_HEADER } from './signAlert.js';
