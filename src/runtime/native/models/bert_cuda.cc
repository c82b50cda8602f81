#include "runtime/native/models/bert_cuda.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/native/kernels/cuda/cuda_status.h"
#include "runtime/native/kernels/cuda/device_memory.h"
#include "runtime/native/kernels/cuda/encoder_kernels.h"
#include "runtime/native/kernels/cuda/gemm.h"
#include "runtime/native/kernels/cuda/host_bf16.h"
#include "runtime/native/kernels/cuda/stage_timeline.h"
#include "runtime/native/loaders/stacked_linear.h"

namespace shoal::native {

using cuda::bf16;
using cuda::DenseLayer;
using cuda::DeviceBuffer;
using cuda::OutputType;

namespace {

cuda::Activation ToActivation(HiddenAct a) {
  switch (a) {
    case HiddenAct::kGelu: return cuda::Activation::kGelu;
    case HiddenAct::kGeluTanh: return cuda::Activation::kGeluTanh;
    case HiddenAct::kRelu: return cuda::Activation::kRelu;
  }
  return cuda::Activation::kGelu;
}

// The GEMM epilogue computing `a` (GELU's tanh form for both GELUs).
cuda::Epilogue ToEpilogue(HiddenAct a) {
  return a == HiddenAct::kRelu ? cuda::Epilogue::kRelu : cuda::Epilogue::kGelu;
}

// Records the end of `stage` when profiling.
Status Mark(cuda::StageTimeline* timeline, const char* stage, cudaStream_t stream) {
  return timeline != nullptr ? timeline->Mark(stage, stream) : Status::Ok();
}

}  // namespace

struct CudaBert::Weights {
  struct Layer {
    std::unique_ptr<DenseLayer> qkv, attn_out, inter, out;
    DeviceBuffer ln1, ln2;  // fp32 gamma | beta
  };
  DeviceBuffer word, position, token_type;  // bf16 tables
  DeviceBuffer emb_ln;                       // fp32 gamma | beta
  std::vector<Layer> layers;
  std::unique_ptr<DenseLayer> head_dense, classifier;  // sequence classifiers only
};

// Everything one call needs on the device, sized for the largest batch seen.
// Buffers are reused across layers: after the attention the qkv buffer is
// free and takes the second dense layer's output; `inter` takes the first's.
class CudaBert::Context {
 public:
  ~Context() {
    gemm.reset();
    if (stream) cudaStreamDestroy(stream);
  }
  size_t memory_bytes() const {
    return gemm->memory_bytes() + hidden.bytes() + qkv.bytes() + attended.bytes() + normed.bytes() +
           inter.bytes() + indices.bytes() + pooled.bytes() + first_rows.bytes() + head.bytes();
  }

  cudaStream_t stream = nullptr;
  std::unique_ptr<cuda::GemmRunner> gemm;
  size_t tokens = 0, sequences = 0;  // capacity
  // [tokens, ·] bf16
  DeviceBuffer hidden, qkv, attended, normed, inter;
  // ids | positions | types ([tokens] each) | offsets ([sequences + 1]), int32
  DeviceBuffer indices;
  cuda::PinnedBuffer staging_in;
  const int32_t* offsets = nullptr;  // the current batch's, inside `indices`
  // [sequences, ·]: pooled vectors or logits (fp32), first rows and the
  // head's hidden layer (bf16)
  DeviceBuffer pooled, first_rows, head;
  cuda::PinnedBuffer staging_out;
};

class CudaBert::ContextLease {
 public:
  ContextLease(const CudaBert* owner, std::unique_ptr<Context> c) : owner_(owner), c_(std::move(c)) {}
  ContextLease(ContextLease&& o) noexcept = default;
  ~ContextLease() {
    if (c_) owner_->Release(std::move(c_));
  }
  Context& operator*() const { return *c_; }

 private:
  const CudaBert* owner_;
  std::unique_ptr<Context> c_;
};

CudaBert::CudaBert() : weights_(std::make_unique<Weights>()) {}

CudaBert::~CudaBert() {
  cudaSetDevice(device_);
  idle_.clear();
  weights_.reset();
}

Result<std::unique_ptr<CudaBert>> CudaBert::Load(const std::string& dir, const EncoderConfig& config, int device,
                                                 size_t reserve_tokens, const std::function<void(double)>& progress,
                                                 CudaKernelChoice kernels) {
  const int devices = cuda::DeviceCount();
  if (device < 0 || device >= devices) {
    return InvalidInput("native.device: cuda:" + std::to_string(device) + ", but this machine has " +
                        std::to_string(devices) + " usable GPU(s)");
  }
  const size_t H = config.hidden_size, I = config.intermediate_size;
  const int heads = static_cast<int>(config.num_attention_heads);
  if (heads == 0 || H % heads != 0 || !cuda::AttentionSupportsHeadDim(static_cast<int>(H / heads))) {
    return InvalidInput(dir + ": the CUDA backend's attention takes head_dim 16, 32 or 64; this model has " +
                        std::to_string(heads ? H / heads : 0));
  }
  SHOAL_CUDA_OK(cudaSetDevice(device));
  std::unique_ptr<CudaBert> m(new CudaBert());
  m->config_ = config;
  m->kernels_ = kernels;
  m->device_ = device;
  auto opened = SafeTensors::OpenDir(dir);
  if (!opened.ok()) return opened.status();
  const SafeTensors& w = **opened;
  Weights& W = *m->weights_;

  // Every tensor goes to the device as soon as it is read; the host copies
  // last only as long as one tensor.
  auto table = [&](const std::string& name, uint32_t rows, DeviceBuffer* dst) -> Status {
    std::vector<float> storage;
    SHOAL_ASSIGN_OR_RETURN(const float* f, w.F32(name, {rows, static_cast<int64_t>(H)}, &storage));
    const std::vector<uint16_t> b = cuda::ToBf16(f, static_cast<size_t>(rows) * H);
    SHOAL_RETURN_IF_ERROR(dst->Upload(b.data(), b.size() * sizeof(uint16_t)));
    m->weight_bytes_ += dst->bytes();
    return Status::Ok();
  };
  auto layer_norm = [&](const std::string& name, DeviceBuffer* dst) -> Status {
    std::vector<float> gamma_storage, beta_storage, both(2 * H);
    SHOAL_ASSIGN_OR_RETURN(const float* g, w.F32(name + ".weight", {static_cast<int64_t>(H)}, &gamma_storage));
    SHOAL_ASSIGN_OR_RETURN(const float* b, w.F32(name + ".bias", {static_cast<int64_t>(H)}, &beta_storage));
    std::copy(g, g + H, both.begin());
    std::copy(b, b + H, both.begin() + H);
    SHOAL_RETURN_IF_ERROR(dst->Upload(both.data(), both.size() * sizeof(float)));
    m->weight_bytes_ += dst->bytes();
    return Status::Ok();
  };
  auto dense = [&](const std::vector<std::string>& names, const std::vector<size_t>& outs, size_t in,
                   OutputType output) -> Result<std::unique_ptr<DenseLayer>> {
    SHOAL_ASSIGN_OR_RETURN(const StackedLinear s, ReadStackedLinear(w, names, outs, in));
    SHOAL_ASSIGN_OR_RETURN(auto d, DenseLayer::Create(s.weights.data(), in, s.out,
                                                      s.bias.empty() ? nullptr : s.bias.data(), output));
    m->weight_bytes_ += d->memory_bytes();
    return d;
  };

  const std::string p = EncoderWeightPrefix(w);
  const std::string e = p + "embeddings.";
  SHOAL_RETURN_IF_ERROR(table(e + "word_embeddings.weight", config.vocab_size, &W.word));
  SHOAL_RETURN_IF_ERROR(table(e + "position_embeddings.weight", config.max_position_embeddings, &W.position));
  SHOAL_RETURN_IF_ERROR(table(e + "token_type_embeddings.weight", config.type_vocab_size, &W.token_type));
  SHOAL_RETURN_IF_ERROR(layer_norm(e + "LayerNorm", &W.emb_ln));
  W.layers.resize(config.num_hidden_layers);
  for (uint32_t i = 0; i < config.num_hidden_layers; ++i) {
    Weights::Layer& L = W.layers[i];
    const std::string l = p + "encoder.layer." + std::to_string(i) + ".";
    SHOAL_ASSIGN_OR_RETURN(L.qkv, dense({l + "attention.self.query", l + "attention.self.key",
                                         l + "attention.self.value"}, {H, H, H}, H, OutputType::kBF16));
    SHOAL_ASSIGN_OR_RETURN(L.attn_out, dense({l + "attention.output.dense"}, {H}, H, OutputType::kBF16));
    SHOAL_RETURN_IF_ERROR(layer_norm(l + "attention.output.LayerNorm", &L.ln1));
    SHOAL_ASSIGN_OR_RETURN(L.inter, dense({l + "intermediate.dense"}, {I}, H, OutputType::kBF16));
    SHOAL_ASSIGN_OR_RETURN(L.out, dense({l + "output.dense"}, {H}, I, OutputType::kBF16));
    SHOAL_RETURN_IF_ERROR(layer_norm(l + "output.LayerNorm", &L.ln2));
    if (progress) progress(static_cast<double>(i + 1) / config.num_hidden_layers);
  }
  if (config.sequence_classifier()) {
    const ClassifierHeadNames head = FindClassifierHead(w, p);
    SHOAL_ASSIGN_OR_RETURN(W.head_dense, dense({head.dense}, {H}, H, OutputType::kBF16));
    SHOAL_ASSIGN_OR_RETURN(W.classifier, dense({head.out}, {config.num_labels}, H, OutputType::kF32));
  }

  // The first context, sized for a full batch now rather than at the first
  // request: its memory is part of what the model costs to keep resident.
  SHOAL_ASSIGN_OR_RETURN(ContextLease first, m->Acquire());
  const size_t reserve = std::max<size_t>(1, std::min<size_t>(reserve_tokens, size_t{1} << 20));
  SHOAL_RETURN_IF_ERROR(m->Reserve(*first, reserve, std::min<size_t>(reserve, 1024)));
  return m;
}

bool CudaBert::has_classifier() const { return weights_->classifier != nullptr; }

size_t CudaBert::memory_bytes() const { return weight_bytes_ + context_bytes_.load(); }

Result<CudaBert::ContextLease> CudaBert::Acquire() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Context> c = std::move(idle_.back());
      idle_.pop_back();
      return ContextLease(this, std::move(c));
    }
  }
  auto c = std::make_unique<Context>();
  SHOAL_CUDA_OK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  SHOAL_ASSIGN_OR_RETURN(c->gemm, cuda::GemmRunner::Create(c->stream));
  context_bytes_ += c->memory_bytes();
  return ContextLease(this, std::move(c));
}

Result<CudaBert::ContextLease> CudaBert::Begin(std::span<const TokenSequence> seqs) const {
  SHOAL_RETURN_IF_ERROR(CheckSequences(config_, seqs));
  SHOAL_CUDA_OK(cudaSetDevice(device_));
  return Acquire();
}

void CudaBert::Release(std::unique_ptr<Context> c) const {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(c));
}

Status CudaBert::Reserve(Context& c, size_t tokens, size_t sequences) const {
  if (tokens <= c.tokens && sequences <= c.sequences) return Status::Ok();
  const size_t before = c.memory_bytes();
  // Grow by half again at least, so a slowly rising batch size does not
  // reallocate every call.
  const size_t T = tokens > c.tokens ? std::max(tokens, c.tokens + c.tokens / 2) : c.tokens;
  const size_t S = sequences > c.sequences ? std::max(sequences, c.sequences + c.sequences / 2) : c.sequences;
  const size_t H = config_.hidden_size, I = config_.intermediate_size;
  const size_t out_width = std::max<size_t>(H, config_.num_labels);
  if (T > c.tokens) {
    SHOAL_RETURN_IF_ERROR(c.hidden.Allocate(T * H * sizeof(bf16)));
    SHOAL_RETURN_IF_ERROR(c.qkv.Allocate(T * 3 * H * sizeof(bf16)));
    SHOAL_RETURN_IF_ERROR(c.attended.Allocate(T * H * sizeof(bf16)));
    SHOAL_RETURN_IF_ERROR(c.normed.Allocate(T * H * sizeof(bf16)));
    SHOAL_RETURN_IF_ERROR(c.inter.Allocate(T * std::max(I, H) * sizeof(bf16)));
  }
  SHOAL_RETURN_IF_ERROR(c.indices.Allocate((3 * T + S + 1) * sizeof(int32_t)));
  SHOAL_RETURN_IF_ERROR(c.staging_in.Allocate((3 * T + S + 1) * sizeof(int32_t)));
  if (S > c.sequences) {
    SHOAL_RETURN_IF_ERROR(c.pooled.Allocate(S * out_width * sizeof(float)));
    SHOAL_RETURN_IF_ERROR(c.staging_out.Allocate(S * out_width * sizeof(float)));
    if (has_classifier()) {
      SHOAL_RETURN_IF_ERROR(c.first_rows.Allocate(S * H * sizeof(bf16)));
      SHOAL_RETURN_IF_ERROR(c.head.Allocate(S * H * sizeof(bf16)));
    }
  }
  c.tokens = T;
  c.sequences = S;
  context_bytes_ += c.memory_bytes() - before;
  return Status::Ok();
}

Status CudaBert::Forward(Context& c, std::span<const TokenSequence> seqs, cuda::StageTimeline* timeline) const {
  const size_t H = config_.hidden_size, I = config_.intermediate_size, S = seqs.size();
  size_t T = 0, max_len = 0;
  for (const auto& q : seqs) {
    T += q.ids.size();
    max_len = std::max(max_len, q.ids.size());
  }
  SHOAL_RETURN_IF_ERROR(Reserve(c, T, S));

  // Token ids, positions, types and sequence offsets: one pinned block, one copy.
  int32_t* ids = c.staging_in.as<int32_t>();
  int32_t* positions = ids + T;
  int32_t* types = positions + T;
  int32_t* offsets = types + T;
  size_t row = 0;
  offsets[0] = 0;
  for (size_t s = 0; s < S; ++s) {
    const TokenSequence& q = seqs[s];
    std::memcpy(ids + row, q.ids.data(), q.ids.size() * sizeof(int32_t));
    EncoderPositions(config_, q.ids, positions + row);
    if (q.type_ids.empty()) {
      std::fill(types + row, types + row + q.ids.size(), 0);
    } else {
      std::memcpy(types + row, q.type_ids.data(), q.ids.size() * sizeof(int32_t));
    }
    row += q.ids.size();
    offsets[s + 1] = static_cast<int32_t>(row);
  }
  const size_t index_bytes = (3 * T + S + 1) * sizeof(int32_t);
  SHOAL_CUDA_OK(cudaMemcpyAsync(c.indices.data(), ids, index_bytes, cudaMemcpyHostToDevice, c.stream));
  const int32_t* d_ids = c.indices.as<int32_t>();
  c.offsets = d_ids + 3 * T;

  const Weights& W = *weights_;
  const float eps = config_.layer_norm_eps;
  bf16* x = c.hidden.as<bf16>();
  bf16* qkv = c.qkv.as<bf16>();
  bf16* attended = c.attended.as<bf16>();
  bf16* normed = c.normed.as<bf16>();
  bf16* inter = c.inter.as<bf16>();
  SHOAL_CUDA_OK(cuda::EmbedTokens(d_ids, d_ids + T, d_ids + 2 * T, T, H, W.word.as<bf16>(), W.position.as<bf16>(),
                                  W.token_type.as<bf16>(), W.emb_ln.as<float>(), W.emb_ln.as<float>() + H, eps, x,
                                  c.stream));
  const int heads = static_cast<int>(config_.num_attention_heads);
  const int head_dim = static_cast<int>(H) / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const cuda::Activation act = ToActivation(config_.hidden_act);
  const cuda::AttentionKernel attention =
      kernels_.register_attention ? cuda::AttentionKernel::kRegisters : cuda::AttentionKernel::kStaged;
  SHOAL_RETURN_IF_ERROR(Mark(timeline, "embeddings", c.stream));
  for (const Weights::Layer& L : W.layers) {
    SHOAL_RETURN_IF_ERROR(c.gemm->Run(*L.qkv, x, T, qkv));
    SHOAL_RETURN_IF_ERROR(Mark(timeline, "qkv gemm", c.stream));
    SHOAL_CUDA_OK(cuda::VarlenAttention(qkv, c.offsets, static_cast<int>(S), static_cast<int>(max_len), heads,
                                        head_dim, scale, attention, attended, c.stream));
    SHOAL_RETURN_IF_ERROR(Mark(timeline, "attention", c.stream));
    SHOAL_RETURN_IF_ERROR(c.gemm->Run(*L.attn_out, attended, T, inter, /*residual=*/x));
    SHOAL_RETURN_IF_ERROR(Mark(timeline, "attention output gemm", c.stream));
    SHOAL_CUDA_OK(cuda::LayerNorm(inter, T, H, L.ln1.as<float>(), L.ln1.as<float>() + H, eps, normed, c.stream));
    SHOAL_RETURN_IF_ERROR(Mark(timeline, "layer norm", c.stream));
    if (kernels_.activation_in_gemm) {
      SHOAL_RETURN_IF_ERROR(c.gemm->RunActivated(*L.inter, normed, T, inter, ToEpilogue(config_.hidden_act)));
      SHOAL_RETURN_IF_ERROR(Mark(timeline, "intermediate gemm", c.stream));
    } else {
      SHOAL_RETURN_IF_ERROR(c.gemm->Run(*L.inter, normed, T, inter));
      SHOAL_RETURN_IF_ERROR(Mark(timeline, "intermediate gemm", c.stream));
      SHOAL_CUDA_OK(cuda::Activate(inter, T * I, act, c.stream));
      SHOAL_RETURN_IF_ERROR(Mark(timeline, "activation", c.stream));
    }
    SHOAL_RETURN_IF_ERROR(c.gemm->Run(*L.out, inter, T, qkv, /*residual=*/normed));
    SHOAL_RETURN_IF_ERROR(Mark(timeline, "output gemm", c.stream));
    SHOAL_CUDA_OK(cuda::LayerNorm(qkv, T, H, L.ln2.as<float>(), L.ln2.as<float>() + H, eps, x, c.stream));
    SHOAL_RETURN_IF_ERROR(Mark(timeline, "layer norm", c.stream));
  }
  return Status::Ok();
}

Status CudaBert::Embed(std::span<const TokenSequence> seqs, Pooling pooling, bool normalize, float* out,
                       int /*threads*/) const {
  if (seqs.empty()) return Status::Ok();
  SHOAL_ASSIGN_OR_RETURN(const ContextLease lease, Begin(seqs));
  Context& c = *lease;
  SHOAL_RETURN_IF_ERROR(Forward(c, seqs));
  const size_t H = config_.hidden_size, S = seqs.size();
  SHOAL_CUDA_OK(cuda::Pool(c.hidden.as<bf16>(), c.offsets, static_cast<int>(S), H, pooling == Pooling::kMean,
                           normalize, c.pooled.as<float>(), c.stream));
  return CopyOut(c, S * H, out);
}

Result<std::map<std::string, double>> CudaBert::ProfileEmbed(std::span<const TokenSequence> seqs) const {
  SHOAL_ASSIGN_OR_RETURN(const ContextLease lease, Begin(seqs));
  Context& c = *lease;
  cuda::StageTimeline timeline;
  SHOAL_RETURN_IF_ERROR(timeline.Mark("", c.stream));
  SHOAL_RETURN_IF_ERROR(Forward(c, seqs, &timeline));
  SHOAL_CUDA_OK(cudaStreamSynchronize(c.stream));
  return timeline.MillisecondsByStage();
}

Status CudaBert::Classify(std::span<const TokenSequence> seqs, float* out, int /*threads*/) const {
  if (!has_classifier()) return InvalidInput("the model has no classification head");
  if (seqs.empty()) return Status::Ok();
  SHOAL_ASSIGN_OR_RETURN(const ContextLease lease, Begin(seqs));
  Context& c = *lease;
  SHOAL_RETURN_IF_ERROR(Forward(c, seqs));
  const size_t H = config_.hidden_size, S = seqs.size();
  SHOAL_CUDA_OK(cuda::GatherFirstRows(c.hidden.as<bf16>(), c.offsets, static_cast<int>(S), H,
                                      c.first_rows.as<bf16>(), c.stream));
  SHOAL_RETURN_IF_ERROR(c.gemm->Run(*weights_->head_dense, c.first_rows.as<bf16>(), S, c.head.data()));
  SHOAL_CUDA_OK(cuda::Activate(c.head.as<bf16>(), S * H, cuda::Activation::kTanh, c.stream));
  SHOAL_RETURN_IF_ERROR(c.gemm->Run(*weights_->classifier, c.head.as<bf16>(), S, c.pooled.data()));
  return CopyOut(c, S * config_.num_labels, out);
}

Status CudaBert::CopyOut(Context& c, size_t floats, float* out) const {
  SHOAL_CUDA_OK(cudaMemcpyAsync(c.staging_out.data(), c.pooled.data(), floats * sizeof(float),
                                cudaMemcpyDeviceToHost, c.stream));
  SHOAL_CUDA_OK(cudaStreamSynchronize(c.stream));
  std::memcpy(out, c.staging_out.data(), floats * sizeof(float));
  return Status::Ok();
}

}  // namespace shoal::native
