/** An HTTP token (RFC 9110, section 5.6.2): what a header field's name must be. */
export const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
