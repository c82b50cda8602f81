// A stand-in for llama.cpp's libmtmd (tools/mtmd: images and audio through
// an --mmproj projector), which node-llama-cpp's prebuilt libraries do not
// include and which would cost more to compile than the server itself
// (clip.cpp, ~45 model graphs, miniaudio). Shoal's tests serve text models
// only. Compiled against the real mtmd.h / mtmd-helper.h, so a change of the
// API shows as a compile error (build with -DSHOAL_MTMD_FULL=ON then).
//
// What llama-server calls without a projector behaves as upstream's: the
// defaults, the log hook, capability queries. mtmd_init_from_file fails, so
// `--mmproj` is refused at start-up; nothing else is reachable without a
// context, and aborts loudly if it ever is.
#include "mtmd.h"
#include "mtmd-helper.h"

#include <cstdio>
#include <cstdlib>

namespace {
[[noreturn]] void unsupported(const char * fn) {
    std::fprintf(stderr, "llama-server (Shoal test build): %s: multimodal support (libmtmd) is not compiled in\n", fn);
    std::abort();
}
}  // namespace

extern "C" {

const char * mtmd_default_marker(void) { return "<__media__>"; }

mtmd_context_params mtmd_context_params_default(void) {
    mtmd_context_params params{
        /* use_gpu           */ true,
        /* device            */ nullptr,
        /* print_timings     */ true,
        /* n_threads         */ 4,
        /* image_marker      */ nullptr,
        /* media_marker      */ mtmd_default_marker(),
        /* flash_attn_type   */ LLAMA_FLASH_ATTN_TYPE_AUTO,
        /* warmup            */ true,
        /* image_min_tokens  */ -1,
        /* image_max_tokens  */ -1,
        /* cb_eval           */ nullptr,
        /* cb_eval_user_data */ nullptr,
        /* batch_max_tokens  */ 1024,
        /* progress_callback */ nullptr,
        /* progress_callback_user_data */ nullptr,
    };
    return params;
}

mtmd_context * mtmd_init_from_file(const char * mmproj_fname, const llama_model *, const mtmd_context_params) {
    std::fprintf(stderr, "llama-server (Shoal test build): cannot load '%s': multimodal support (libmtmd) is not compiled in\n",
                 mmproj_fname ? mmproj_fname : "");
    return nullptr;
}

void mtmd_free(mtmd_context *) {}
void mtmd_log_set(ggml_log_callback, void *) {}
bool mtmd_support_vision(const mtmd_context *) { return false; }
bool mtmd_support_audio(const mtmd_context *) { return false; }
mtmd_caps mtmd_get_cap_from_file(const char *) { return mtmd_caps{false, false}; }

mtmd_helper_video_init_params mtmd_helper_video_init_params_default(void) {
    return {
        /* fps_target             */ 4.0f,
        /* ffmpeg_bin_dir         */ nullptr,
        /* timestamp_interval_ms  */ 5000,
    };
}
mtmd_helper_init_opt mtmd_helper_init_opt_default(void) { return {mtmd_helper_video_init_params_default()}; }
void mtmd_helper_log_set(ggml_log_callback, void *) {}
bool mtmd_helper_support_video(const mtmd_context *) { return false; }

// Nothing makes chunks or bitmaps without a context; freeing nothing is fine.
void mtmd_input_chunks_free(mtmd_input_chunks *) {}
void mtmd_input_chunk_free(mtmd_input_chunk *) {}
void mtmd_bitmap_free(mtmd_bitmap *) {}
void mtmd_batch_free(mtmd_batch *) {}
void mtmd_helper_video_free(mtmd_helper_video *) {}

mtmd_input_chunks * mtmd_input_chunks_init(void) { unsupported(__func__); }
size_t mtmd_input_chunks_size(const mtmd_input_chunks *) { unsupported(__func__); }
const mtmd_input_chunk * mtmd_input_chunks_get(const mtmd_input_chunks *, size_t) { unsupported(__func__); }
enum mtmd_input_chunk_type mtmd_input_chunk_get_type(const mtmd_input_chunk *) { unsupported(__func__); }
const llama_token * mtmd_input_chunk_get_tokens_text(const mtmd_input_chunk *, size_t *) { unsupported(__func__); }
size_t mtmd_input_chunk_get_n_tokens(const mtmd_input_chunk *) { unsupported(__func__); }
const char * mtmd_input_chunk_get_id(const mtmd_input_chunk *) { unsupported(__func__); }
llama_pos mtmd_input_chunk_get_n_pos(const mtmd_input_chunk *) { unsupported(__func__); }
mtmd_input_chunk * mtmd_input_chunk_copy(const mtmd_input_chunk *) { unsupported(__func__); }
mtmd_input_chunk * mtmd_input_chunk_get_placeholder(const mtmd_input_chunk *) { unsupported(__func__); }
int32_t mtmd_input_chunk_save(const mtmd_input_chunk *, char *, size_t, size_t *) { unsupported(__func__); }
mtmd_input_chunk * mtmd_input_chunk_load(const char *, size_t) { unsupported(__func__); }
int32_t mtmd_tokenize(const mtmd_context *, mtmd_input_chunks *, const mtmd_input_text *, const mtmd_bitmap * const *,
                      size_t) {
    unsupported(__func__);
}
mtmd_bitmap * mtmd_bitmap_init(uint32_t, uint32_t, const unsigned char *) { unsupported(__func__); }
uint32_t mtmd_bitmap_get_nx(const mtmd_bitmap *) { unsupported(__func__); }
uint32_t mtmd_bitmap_get_ny(const mtmd_bitmap *) { unsupported(__func__); }
const unsigned char * mtmd_bitmap_get_data(const mtmd_bitmap *) { unsupported(__func__); }
size_t mtmd_bitmap_get_n_bytes(const mtmd_bitmap *) { unsupported(__func__); }
const char * mtmd_bitmap_get_id(const mtmd_bitmap *) { unsupported(__func__); }
void mtmd_bitmap_set_id(mtmd_bitmap *, const char *) { unsupported(__func__); }
mtmd_batch * mtmd_batch_init(mtmd_context *) { unsupported(__func__); }
int32_t mtmd_batch_add_chunk(mtmd_batch *, const mtmd_input_chunk *) { unsupported(__func__); }
int32_t mtmd_batch_encode(mtmd_batch *) { unsupported(__func__); }
float * mtmd_batch_get_output_embd(mtmd_batch *, const mtmd_input_chunk *) { unsupported(__func__); }
mtmd_helper_bitmap_wrapper mtmd_helper_bitmap_init_from_file(const mtmd_context *, const char *, bool, mtmd_helper_init_opt) {
    unsupported(__func__);
}
mtmd_helper_bitmap_wrapper mtmd_helper_bitmap_init_from_buf(const mtmd_context *, const unsigned char *, size_t, bool,
                                                            mtmd_helper_init_opt) {
    unsupported(__func__);
}
int32_t mtmd_helper_decode_image_chunk(mtmd_context *, llama_context *, const mtmd_input_chunk *, float *, llama_pos,
                                       llama_seq_id, int32_t, llama_pos *, mtmd_helper_post_decode_callback, void *) {
    unsupported(__func__);
}

}  // extern "C"

std::map<ggml_backend_dev_t, size_t> mtmd_get_memory_usage(const char *, mtmd_context_params) { return {}; }
