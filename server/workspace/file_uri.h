/* file: URIs and paths, as LSP clients and SARIF readers write them. */
#ifndef ADVISE_FILE_URI_H
#define ADVISE_FILE_URI_H

/* The path of a file: URI, percent-decoded (a NUL byte becomes '?'); a URI
 * of another scheme is returned as it is. Heap; NULL when out of memory. */
char *file_uri_to_path(const char *uri);
/* A file: URI for an absolute path, with every byte outside
 * [A-Za-z0-9/-_.~] percent-encoded. Heap; NULL when out of memory. */
char *file_uri_from_path(const char *path);

#endif
