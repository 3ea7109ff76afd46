/* JSON-RPC 2.0 over a byte stream with LSP's `Content-Length` framing.
 * The reader copes with partial reads, several messages in one read and
 * large messages; a malformed header is reported and skipped so that the
 * server keeps serving. The writer may be called from any thread. */
#ifndef ADVISE_JSONRPC_H
#define ADVISE_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define JSONRPC_MAX_MESSAGE (64u * 1024 * 1024)

enum {
    JSONRPC_PARSE_ERROR = -32700,
    JSONRPC_INVALID_REQUEST = -32600,
    JSONRPC_METHOD_NOT_FOUND = -32601,
    JSONRPC_INVALID_PARAMS = -32602,
    JSONRPC_INTERNAL_ERROR = -32603,
    LSP_SERVER_NOT_INITIALIZED = -32002,
    LSP_REQUEST_FAILED = -32803,
    LSP_SERVER_CANCELLED = -32802,
    LSP_CONTENT_MODIFIED = -32801,
    LSP_REQUEST_CANCELLED = -32800,
};

typedef struct JsonRpcReader JsonRpcReader;

typedef enum {
    READ_MESSAGE,   /* *body holds one message body (NUL-terminated, caller frees) */
    READ_BAD_FRAME, /* a header could not be understood; *error says why; the reader resynchronises */
    READ_EOF,       /* the stream ended */
    READ_IO_ERROR,
} ReadStatus;

JsonRpcReader *jsonrpc_reader_new(int fd);
void jsonrpc_reader_free(JsonRpcReader *r);
ReadStatus jsonrpc_read(JsonRpcReader *r, char **body, size_t *length, char **error);

/* Writers: thread-safe; they take ownership of `message` (json_decref). */
void jsonrpc_set_output(int fd);
bool jsonrpc_send(json_t *message);
/* Sends a message already serialized (n bytes of JSON text). */
bool jsonrpc_send_text(const char *text, size_t n);
bool jsonrpc_send_result(json_t *id, json_t *result);
bool jsonrpc_send_error(json_t *id, int code, const char *message);
bool jsonrpc_send_notification(const char *method, json_t *params);

#endif
