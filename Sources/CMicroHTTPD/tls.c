#include "tls_binding.h"

#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A chain longer than this is refused; real ones have two to four certificates. */
#define CMICROHTTPD_TLS_MAX_CHAIN 16
/* PEM files larger than this are refused before parsing. */
#define CMICROHTTPD_TLS_MAX_FILE (1 << 20)

/* One loaded certificate chain and key, freed when the holder and every connection that took
   it in a handshake have let go of it. */
struct credentials {
    gnutls_pcert_st chain[CMICROHTTPD_TLS_MAX_CHAIN];
    unsigned int chain_length;
    gnutls_privkey_t key;
    unsigned int references;
};

struct CMicroHTTPD_TLS {
    /* Guards `current` and every `references`: taken once per handshake and per reload. */
    pthread_mutex_t lock;
    struct credentials *current;
};

/* A connection's socket context while TLS is on. */
struct tls_connection {
    struct CMicroHTTPD_TLS *tls;
    /* The credentials its last handshake used, or NULL before the first. */
    struct credentials *held;
    /* The socket context the application's callback sees. */
    void *application_context;
};

static void free_credentials(struct credentials *credentials) {
    for (unsigned int index = 0; index < credentials->chain_length; index++) {
        gnutls_pcert_deinit(&credentials->chain[index]);
    }
    if (credentials->key != NULL) {
        gnutls_privkey_deinit(credentials->key);
    }
    free(credentials);
}

static struct credentials *acquire(struct CMicroHTTPD_TLS *tls) {
    pthread_mutex_lock(&tls->lock);
    struct credentials *credentials = tls->current;
    if (credentials != NULL) {
        credentials->references++;
    }
    pthread_mutex_unlock(&tls->lock);
    return credentials;
}

static void release(struct CMicroHTTPD_TLS *tls, struct credentials *credentials) {
    if (credentials == NULL) {
        return;
    }
    pthread_mutex_lock(&tls->lock);
    int unused = --credentials->references == 0;
    pthread_mutex_unlock(&tls->lock);
    if (unused) {
        free_credentials(credentials);
    }
}

struct CMicroHTTPD_TLS *CMicroHTTPD_tls_create(void) {
    struct CMicroHTTPD_TLS *tls = calloc(1, sizeof *tls);
    if (tls != NULL && pthread_mutex_init(&tls->lock, NULL) != 0) {
        free(tls);
        return NULL;
    }
    return tls;
}

void CMicroHTTPD_tls_free(struct CMicroHTTPD_TLS *tls) {
    if (tls == NULL) {
        return;
    }
    release(tls, tls->current);
    pthread_mutex_destroy(&tls->lock);
    free(tls);
}

/* Reads a whole file of at most CMICROHTTPD_TLS_MAX_FILE bytes (NUL-terminated); 0 or an errno. */
static int read_file(const char *path, gnutls_datum_t *contents) {
    FILE *file = fopen(path, "rbe");
    if (file == NULL) {
        return errno;
    }
    unsigned char *buffer = malloc(CMICROHTTPD_TLS_MAX_FILE + 1);
    if (buffer == NULL) {
        fclose(file);
        return ENOMEM;
    }
    size_t length = fread(buffer, 1, CMICROHTTPD_TLS_MAX_FILE + 1, file);
    int failed = ferror(file);
    fclose(file);
    if (failed || length > CMICROHTTPD_TLS_MAX_FILE) {
        free(buffer);
        return failed ? EIO : EFBIG;
    }
    buffer[length] = '\0';
    contents->data = buffer;
    contents->size = (unsigned int)length;
    return 0;
}

static void forget(gnutls_datum_t *contents) {
    if (contents->data != NULL) {
        gnutls_memset(contents->data, 0, contents->size);
        free(contents->data);
        contents->data = NULL;
    }
}

/* Whether the key's public half is the certificate's public key. */
static int key_matches(gnutls_privkey_t key, gnutls_pubkey_t certificate_key) {
    gnutls_pubkey_t public_key;
    if (gnutls_pubkey_init(&public_key) < 0) {
        return 0;
    }
    gnutls_datum_t ours = {NULL, 0}, theirs = {NULL, 0};
    int matches = gnutls_pubkey_import_privkey(public_key, key, 0, 0) >= 0
                  && gnutls_pubkey_export2(public_key, GNUTLS_X509_FMT_DER, &ours) >= 0
                  && gnutls_pubkey_export2(certificate_key, GNUTLS_X509_FMT_DER, &theirs) >= 0
                  && ours.size == theirs.size && memcmp(ours.data, theirs.data, ours.size) == 0;
    gnutls_free(ours.data);
    gnutls_free(theirs.data);
    gnutls_pubkey_deinit(public_key);
    return matches;
}

/* Whether the key belongs to a certificate of the file other than its first (a chain in the wrong
   order: sorting keeps the first certificate as the leaf and drops what does not chain to it). */
static int key_matches_a_later_certificate(gnutls_privkey_t key, const gnutls_datum_t *pem) {
    gnutls_pcert_st chain[CMICROHTTPD_TLS_MAX_CHAIN];
    unsigned int length = CMICROHTTPD_TLS_MAX_CHAIN;
    if (gnutls_pcert_list_import_x509_raw(chain, &length, pem, GNUTLS_X509_FMT_PEM, 0) < 0) {
        return 0;
    }
    int found = 0;
    for (unsigned int index = 0; index < length; index++) {
        found = found || (index > 0 && key_matches(key, chain[index].pubkey));
        gnutls_pcert_deinit(&chain[index]);
    }
    return found;
}

static void describe(const struct credentials *credentials, struct CMicroHTTPD_CertificateInfo *info) {
    memset(info, 0, sizeof *info);
    info->chain_length = credentials->chain_length;
    gnutls_x509_crt_t leaf;
    if (gnutls_x509_crt_init(&leaf) < 0) {
        return;
    }
    if (gnutls_x509_crt_import(leaf, &credentials->chain[0].cert, GNUTLS_X509_FMT_DER) >= 0) {
        gnutls_datum_t subject = {NULL, 0};
        if (gnutls_x509_crt_get_dn3(leaf, &subject, 0) >= 0) {
            snprintf(info->subject, sizeof info->subject, "%.*s", (int)subject.size, (const char *)subject.data);
        }
        gnutls_free(subject.data);
        info->not_before = (int64_t)gnutls_x509_crt_get_activation_time(leaf);
        info->not_after = (int64_t)gnutls_x509_crt_get_expiration_time(leaf);
        size_t size = sizeof info->sha256;
        (void)gnutls_x509_crt_get_fingerprint(leaf, GNUTLS_DIG_SHA256, info->sha256, &size);
    }
    gnutls_x509_crt_deinit(leaf);
}

int CMicroHTTPD_tls_load(struct CMicroHTTPD_TLS *tls, const char *certificate_path, const char *key_path,
                         struct CMicroHTTPD_CertificateInfo *info, char *error, size_t error_capacity) {
    gnutls_datum_t certificate_pem = {NULL, 0}, key_pem = {NULL, 0};
    struct credentials *fresh = NULL;
    int status = 0;
    int problem;

    if ((problem = read_file(certificate_path, &certificate_pem)) != 0) {
        snprintf(error, error_capacity, "cannot read %s: %s", certificate_path, strerror(problem));
        status = CMICROHTTPD_TLS_CERTIFICATE_UNREADABLE;
        goto done;
    }
    if ((problem = read_file(key_path, &key_pem)) != 0) {
        snprintf(error, error_capacity, "cannot read %s: %s", key_path, strerror(problem));
        status = CMICROHTTPD_TLS_KEY_UNREADABLE;
        goto done;
    }
    fresh = calloc(1, sizeof *fresh);
    if (fresh == NULL) {
        snprintf(error, error_capacity, "out of memory");
        status = CMICROHTTPD_TLS_OUT_OF_MEMORY;
        goto done;
    }
    fresh->chain_length = CMICROHTTPD_TLS_MAX_CHAIN;
    int result = gnutls_pcert_list_import_x509_raw(fresh->chain, &fresh->chain_length, &certificate_pem,
                                                   GNUTLS_X509_FMT_PEM,
                                                   GNUTLS_X509_CRT_LIST_SORT | GNUTLS_X509_CRT_LIST_IMPORT_FAIL_IF_EXCEED);
    if (result < 0 || fresh->chain_length == 0) {
        if (result < 0) {
            fresh->chain_length = 0;
        }
        snprintf(error, error_capacity, "%s holds no usable PEM certificate chain: %s", certificate_path,
                 result == GNUTLS_E_SHORT_MEMORY_BUFFER ? "more than 16 certificates"
                 : result < 0                          ? gnutls_strerror(result)
                                                       : "no certificate found");
        status = CMICROHTTPD_TLS_CERTIFICATE_INVALID;
        goto done;
    }
    if ((result = gnutls_privkey_init(&fresh->key)) < 0
        || (result = gnutls_privkey_import_x509_raw(fresh->key, &key_pem, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(error, error_capacity, "%s holds no usable unencrypted PEM private key: %s", key_path, gnutls_strerror(result));
        status = CMICROHTTPD_TLS_KEY_INVALID;
        goto done;
    }
    if (!key_matches(fresh->key, fresh->chain[0].pubkey)) {
        if (key_matches_a_later_certificate(fresh->key, &certificate_pem)) {
            snprintf(error, error_capacity, "%s: the server's certificate must come first, before those that issued it",
                     certificate_path);
            status = CMICROHTTPD_TLS_CERTIFICATE_INVALID;
            goto done;
        }
        snprintf(error, error_capacity, "the key in %s does not belong to the certificate in %s", key_path, certificate_path);
        status = CMICROHTTPD_TLS_KEY_MISMATCH;
        goto done;
    }
    describe(fresh, info);

    fresh->references = 1; /* the holder's */
    pthread_mutex_lock(&tls->lock);
    struct credentials *previous = tls->current;
    tls->current = fresh;
    pthread_mutex_unlock(&tls->lock);
    fresh = NULL;
    release(tls, previous);

done:
    if (fresh != NULL) {
        free_credentials(fresh);
    }
    forget(&certificate_pem);
    forget(&key_pem);
    return status;
}

void CMicroHTTPD_tls_notify_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                                       enum MHD_ConnectionNotificationCode code) {
    struct CMicroHTTPD_TLSBinding *binding = cls;
    struct tls_connection *record;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        /* Without a record the handshake fails (the certificate callback finds none): the
           connection is refused, never served with the wrong credentials. */
        record = calloc(1, sizeof *record);
        if (record != NULL) {
            record->tls = binding->tls;
        }
        *socket_context = record;
        if (binding->notify != NULL) {
            binding->notify(binding->notify_cls, connection, record != NULL ? &record->application_context : NULL, code);
        }
        return;
    }
    record = *socket_context;
    if (binding->notify != NULL) {
        binding->notify(binding->notify_cls, connection, record != NULL ? &record->application_context : NULL, code);
    }
    if (record != NULL) {
        release(record->tls, record->held);
        free(record);
        *socket_context = NULL;
    }
}

int CMicroHTTPD_tls_retrieve_certificate(gnutls_session_t session, const gnutls_datum_t *requested_issuers,
                                         int issuer_count, const gnutls_pk_algorithm_t *algorithms,
                                         int algorithm_count, gnutls_pcert_st **chain, unsigned int *chain_length,
                                         gnutls_privkey_t *key) {
    (void)requested_issuers;
    (void)issuer_count;
    (void)algorithms;
    (void)algorithm_count;
    /* libmicrohttpd sets the session pointer to the connection. */
    struct MHD_Connection *connection = gnutls_session_get_ptr(session);
    const union MHD_ConnectionInfo *context =
        connection != NULL ? MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    struct tls_connection *record = context != NULL ? context->socket_context : NULL;
    if (record == NULL) {
        return -1;
    }
    struct credentials *credentials = acquire(record->tls);
    if (credentials == NULL) {
        return -1;
    }
    /* A second handshake on the connection lets go of the first one's credentials. */
    release(record->tls, record->held);
    record->held = credentials;
    *chain = credentials->chain;
    *chain_length = credentials->chain_length;
    *key = credentials->key;
    return 0;
}
