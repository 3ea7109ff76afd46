/* The CUDA front end (libclang on an unsaved buffer) with every rule. Slow:
 * scripts/fuzz.sh gives it its own budget. */
#include <stdlib.h>

#include "analysis/cuda/cuda_source.h"
#include "analysis/document.h"
#include "analysis/finding.h"
#include "rules/engine/config.h"
#include "rules/engine/engine.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 16 * 1024 || !utf8_validate((const char *)data, size, NULL)) return 0;
    Document *doc = document_new("/tmp/advise-fuzz/fuzz.cu", LANGUAGE_CUDA, (const char *)data, size);
    if (!doc) return 0;
    Config cfg;
    config_init(&cfg);
    char *error = NULL;
    CudaSource *src = cuda_source_new(doc, NULL, &error);
    free(error);
    error = NULL;
    if (src) {
        FindingList out;
        finding_list_init(&out);
        if (engine_check_cuda(doc, src, &cfg, &out, NULL, &error)) fuzz_check_findings(&out, doc->length);
        free(error);
        finding_list_free(&out);
        cuda_source_free(src);
    }
    config_free(&cfg);
    document_free(doc);
    return 0;
}
