#ifndef ENGAGE_CMICROHTTPD_TLS_BINDING_H
#define ENGAGE_CMICROHTTPD_TLS_BINDING_H

#include "CMicroHTTPD.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

/*
 * How a daemon serving HTTPS reaches its credentials (tls.c). GnuTLS's certificate callback
 * gets no context pointer of its own, so each connection carries one in its socket context,
 * set when libmicrohttpd reports the connection started (always before its handshake); the
 * application's own connection callback is called with a socket context slot of its own.
 */
struct CMicroHTTPD_TLSBinding {
    struct CMicroHTTPD_TLS *tls;
    MHD_NotifyConnectionCallback notify;
    void *notify_cls;
};

/* An MHD_NotifyConnectionCallback whose cls is a struct CMicroHTTPD_TLSBinding. */
void CMicroHTTPD_tls_notify_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                                       enum MHD_ConnectionNotificationCode code);

/* A gnutls_certificate_retrieve_function2, given as MHD_OPTION_HTTPS_CERT_CALLBACK: the
   credentials current when the handshake starts, held by the connection until it closes. */
int CMicroHTTPD_tls_retrieve_certificate(gnutls_session_t session, const gnutls_datum_t *requested_issuers,
                                         int issuer_count, const gnutls_pk_algorithm_t *algorithms,
                                         int algorithm_count, gnutls_pcert_st **chain, unsigned int *chain_length,
                                         gnutls_privkey_t *key);

#endif
