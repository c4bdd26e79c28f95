// The C++ side of a simulated CUDA machine, for a torch built without CUDA, and of a simulated
// Apple GPU (MPS), for a torch built without MPS (every Linux build).
//
// PyTorch's C++ asks two registries about CUDA: the device guard (which device is current, how
// many there are: used to pick a device for .to("cuda") and by the autograd engine) and the CUDA
// hooks (whether CUDA is there at all, which memory is pinned: used by at::getAccelerator(), the
// autograd engine's streams, pin_memory and is_pinned). A CPU build registers neither; this
// library registers both. Streams and events are the Python side's business. It changes nothing
// on a torch built with CUDA: there the real guard and hooks are registered, and stay.
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/detail/MPSHooksInterface.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

#include <atomic>
#include <mutex>
#include <unordered_set>

namespace {
std::atomic<int> device_count{0};
constexpr c10::DeviceIndex kEngineDevices = 16;   // the largest simulated node (machines.parse)
thread_local c10::DeviceIndex current_index = 0;

// What both simulated devices' guards answer alike: work runs as it is queued, on the default stream, so
// nothing ever waits and every stream and event is done.
struct NothingQueued : public c10::impl::DeviceGuardImplInterface {
  // getStream and exchangeStream are noexcept: torch 2.6 declares them so (a stricter override is allowed).
  c10::Stream getStream(c10::Device d) const noexcept override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream getDefaultStream(c10::Device d) const override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return c10::Stream(c10::Stream::DEFAULT, s.device()); }
  void record(void**, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
  void synchronizeEvent(void*) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
};

struct SimulatedCudaGuard final : public NothingQueued {
  c10::DeviceType type() const override { return c10::DeviceType::CUDA; }
  c10::Device exchangeDevice(c10::Device d) const override {
    auto old = getDevice();
    setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(c10::DeviceType::CUDA, current_index); }
  void setDevice(c10::Device d) const override {
    // As C10_CUDA_CHECK(cudaSetDevice) fails (c10/cuda/CUDAException.cpp): torch.AcceleratorError, with
    // the same message as gpulab.simulated.runtime.cuda_error (cudaErrorInvalidDevice is 101). Only past
    // kEngineDevices: the autograd engine sets each of its device threads' device (see deviceCount), and
    // the Python side checks the ordinals a program asks for against the machine's real count.
    // Before torch 2.8 the same failure is a c10::Error (RuntimeError), as there was no AcceleratorError.
    if (d.index() >= kEngineDevices) {
#if TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 8
      throw c10::AcceleratorError(
          {__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, 101,
#else
      throw c10::Error(
          {__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
#endif
          "CUDA error: invalid device ordinal\nGPU device may be out of range, do you have enough GPUs?\n"
          "For more detailed error information, run with CUDA_LOG_FILE=stderr\n"
          "Device-side assertion tracking was not enabled by user.");
    }
    if (d.index() >= 0) current_index = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0) current_index = d.index();
  }
  // The autograd engine sizes its per-device queues once per process, from this count, at its first
  // backward (torch/csrc/autograd/engine.cpp, start_device_threads); a machine switched on later, by a
  // check's SimulatedGPU after a CPU backward, must still find a queue for each of its GPUs.
  c10::DeviceIndex deviceCount() const noexcept override { return kEngineDevices; }
};

SimulatedCudaGuard guard;

// Pinned host memory: host memory from the CPU allocator whose pointers are remembered, so that
// is_pinned() answers as for memory from cudaHostAlloc.
std::mutex pinned_mutex;
std::unordered_set<const void*> pinned;

void delete_pinned(void* context) {
  auto* inner = static_cast<c10::DataPtr*>(context);
  {
    std::lock_guard<std::mutex> lock(pinned_mutex);
    pinned.erase(inner->get());
  }
  delete inner;
}

// `on_mps`, where given: while it holds 1, the memory's DataPtr says it is on mps:0 (see mps_pinned_allocator).
struct PinnedAllocator final : public c10::Allocator {
  explicit PinnedAllocator(const std::atomic<int>* on_mps = nullptr) : on_mps(on_mps) {}
  c10::DataPtr allocate(size_t nbytes) override {
    auto* inner = new c10::DataPtr(c10::GetDefaultCPUAllocator()->allocate(nbytes));
    void* data = inner->get();
    {
      std::lock_guard<std::mutex> lock(pinned_mutex);
      pinned.insert(data);
    }
    auto device = on_mps != nullptr && on_mps->load() ? c10::Device(c10::DeviceType::MPS, 0) : c10::Device(c10::DeviceType::CPU);
    return c10::DataPtr(data, inner, &delete_pinned, device);
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

 private:
  const std::atomic<int>* on_mps;
};

PinnedAllocator pinned_allocator;

struct SimulatedCudaHooks final : public at::CUDAHooksInterface {
  SimulatedCudaHooks(at::CUDAHooksArgs) {}
  void init() const override {}
  bool hasCUDA() const override { return device_count.load() > 0; }
  bool hasCUDART() const override { return device_count.load() > 0; }
  // Virtual in the interface from torch 2.7 on (and overridden there); plain members before.
  bool isBuilt() const { return true; }
  bool isAvailable() const { return device_count.load() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex index) const override { return index >= 0 && index < device_count.load(); }
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(device_count.load()); }
  int getNumGPUs() const override { return device_count.load(); }
  c10::DeviceIndex current_device() const override { return current_index; }
  c10::DeviceIndex getCurrentDevice() const override { return current_index; }
  void setCurrentDevice(c10::DeviceIndex index) const override { guard.setDevice(c10::Device(c10::DeviceType::CUDA, index)); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) const override {
    auto old = current_index;
    setCurrentDevice(index);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex index) const override { return exchangeDevice(index); }
  bool isPinnedPtr(const void* data) const override {
    std::lock_guard<std::mutex> lock(pinned_mutex);
    return pinned.count(data) > 0;
  }
  c10::Allocator* getPinnedMemoryAllocator() const override { return &pinned_allocator; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override { return at::detail::getDefaultCPUGenerator(); }
  at::Generator getNewGenerator(c10::DeviceIndex) const override { return at::detail::createCPUGenerator(); }
  void deviceSynchronize(c10::DeviceIndex) const override {}
};
}  // namespace

SimulatedCudaHooks hooks{at::CUDAHooksArgs{}};
void* original_hooks_vtable = nullptr;

// PyTorch makes its CUDA hooks object once, at the first question about CUDA (during import torch),
// and keeps it for the life of the process. Neither it nor our class has data besides the vtable
// pointer, so the object is turned into ours by giving it our vtable; the first word of a
// polymorphic object is its vtable pointer in the Itanium C++ ABI that gcc and clang follow.
void** hooks_object() {
  return reinterpret_cast<void**>(const_cast<at::CUDAHooksInterface*>(&at::detail::getCUDAHooks()));
}
void set_hooks(bool simulated) {
  void** object = hooks_object();
  void* ours = *reinterpret_cast<void**>(&hooks);
  if (original_hooks_vtable == nullptr && *object != ours) original_hooks_vtable = *object;
  *object = simulated ? ours : original_hooks_vtable;
}
static_assert(sizeof(SimulatedCudaHooks) == sizeof(at::CUDAHooksInterface), "the hooks must hold nothing but a vtable");

// DDP's reducer times each iteration with the timer registered for its device type
// (torch/csrc/distributed/c10d/reducer.cpp; CudaTimer lives in a CUDA build's libtorch_cuda), and asserts
// that there is one from its second iteration on (logger.cpp, set_runtime_stats_and_log). The GPU's work
// runs on the host here, so host timestamps are its times, as the CPU timer keeps them.
struct SimulatedTimer final : public c10d::Timer {
  explicit SimulatedTimer(c10::Device) {}
  std::optional<int64_t> measureDifference(Event start, Event end) override {
    int64_t start_time = getTimeRef(start);
    int64_t end_time = getTimeRef(end);
    if (start_time == c10d::kUnsetTime || end_time == c10d::kUnsetTime) return std::nullopt;
    if (end_time < start_time) return std::nullopt;
    return end_time - start_time;
  }
};

void register_timer() {
  auto* registry = c10d::TimerRegistry();
  if (!registry->Has(c10::DeviceType::CUDA)) {   // a CUDA build has its own
    registry->Register(c10::DeviceType::CUDA, [](c10::Device device) -> std::unique_ptr<c10d::Timer> {
      return std::make_unique<SimulatedTimer>(device);
    });
  }
}

const c10::impl::DeviceGuardImplInterface* original_guard = nullptr;   // a CUDA build's own

// Takes CUDA's slot in the device guard registry. `replace`: a CUDA build's own guard may be replaced
// (the Python side asks for it only where that build finds no GPU, so the guard has nothing to do).
bool take_guard(bool replace) {
  auto& slot = c10::impl::device_guard_impl_registry[static_cast<size_t>(c10::DeviceType::CUDA)];
  const c10::impl::DeviceGuardImplInterface* registered = slot.load();
  if (registered == &guard) return true;
  if (registered != nullptr) {
    if (!replace) return false;
    original_guard = registered;
  }
  slot.store(&guard);
  return true;
}

// Whether this torch was built with CUDA: the hooks' isBuilt() where the interface has it; before that
// (torch 2.6), whether they can tell the CUDA runtime's version, which the interface's own refuses.
template <typename Hooks>
auto cuda_is_built(const Hooks& hooks, int) -> decltype(hooks.isBuilt()) { return hooks.isBuilt(); }
template <typename Hooks>
bool cuda_is_built(const Hooks& hooks, long) {
  try {
    hooks.versionCUDART();
    return true;
  } catch (const c10::Error&) {
    return false;
  }
}

// ---------------------------------------------------------------- a simulated Apple GPU (MPS)
//
// A Linux build of torch has MPS's Python bindings (torch/csrc/mps/Module.cpp, whose answers the Python
// side replaces) and default MPS hooks that say there is no MPS. at::getAccelerator() (ATen's
// DeviceAccelerator.cpp) asks the hooks of each backend in turn, so hooks that say MPS is there make MPS
// the accelerator C++ sees (the autograd engine, pin_memory and is_pinned without a device); the device
// guard lets .to("mps") and the engine set and read the (one) MPS device.
namespace {
std::atomic<int> mps_count{0};

struct SimulatedMpsGuard final : public NothingQueued {
  c10::DeviceType type() const override { return c10::DeviceType::MPS; }
  c10::Device exchangeDevice(c10::Device) const override { return c10::Device(c10::DeviceType::MPS, 0); }
  c10::Device getDevice() const override { return c10::Device(c10::DeviceType::MPS, 0); }
  void setDevice(c10::Device) const override {}   // one device: MPSGuardImpl's setDevice does nothing either
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
};

SimulatedMpsGuard mps_guard;

// Memory the simulated MPS pinned-memory allocator hands out: host memory, remembered as pinned. Where
// `mps_pinned_device` is 1, its DataPtr says it is on mps:0, as the shared-storage buffers of MPS's own
// pinned allocator do (aten/src/ATen/mps/MPSAllocator.mm); the Python side chooses per torch version.
std::atomic<int> mps_pinned_device{0};

PinnedAllocator mps_pinned_allocator{&mps_pinned_device};

// `override` only on hasMPS, which every supported torch declares: the rest of MPSHooksInterface changed from
// version to version (a function of the same signature overrides where the base declares it, and is an unused
// extra entry where it does not).
struct SimulatedMpsHooks final : public at::MPSHooksInterface {
  void init() const {}
  bool hasMPS() const override { return mps_count.load() > 0; }
  bool isOnMacOSorNewer(unsigned, unsigned) const { return true; }
  void deviceSynchronize() const {}
  void commitStream() const {}
  void emptyCache() const {}
  bool isBuilt() const { return true; }
  bool isAvailable() const { return mps_count.load() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex index) const { return index == 0 && mps_count.load() > 0; }
  c10::DeviceIndex deviceCount() const { return static_cast<c10::DeviceIndex>(mps_count.load()); }
  c10::DeviceIndex getCurrentDevice() const { return 0; }
  bool isPinnedPtr(const void* data) const {
    std::lock_guard<std::mutex> lock(pinned_mutex);
    return pinned.count(data) > 0;
  }
  c10::Allocator* getPinnedMemoryAllocator() const { return &mps_pinned_allocator; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const { return at::detail::getDefaultCPUGenerator(); }
};

SimulatedMpsHooks mps_hooks;
void* original_mps_vtable = nullptr;
static_assert(sizeof(SimulatedMpsHooks) == sizeof(at::MPSHooksInterface), "the hooks must hold nothing but a vtable");

void set_mps_hooks(bool simulated) {
  void** object = reinterpret_cast<void**>(const_cast<at::MPSHooksInterface*>(&at::detail::getMPSHooks()));
  void* ours = *reinterpret_cast<void**>(&mps_hooks);
  if (original_mps_vtable == nullptr && *object != ours) original_mps_vtable = *object;
  *object = simulated ? ours : original_mps_vtable;
}

bool take_mps_guard() {
  auto& slot = c10::impl::device_guard_impl_registry[static_cast<size_t>(c10::DeviceType::MPS)];
  const c10::impl::DeviceGuardImplInterface* registered = slot.load();
  if (registered == &mps_guard) return true;
  if (registered != nullptr) return false;   // a build with MPS: its own guard stays
  slot.store(&mps_guard);
  return true;
}
}  // namespace

extern "C" {
// Sets the simulated device count (0: switched off) and puts the guard and hooks in place; 0 where a
// CUDA build's own are there and `replace` is 0.
int gpulab_install(int count, int replace) {
  bool hooks_are_ours = *hooks_object() == *reinterpret_cast<void**>(&hooks);
  if (!hooks_are_ours && cuda_is_built(at::detail::getCUDAHooks(), 0) && !replace) return 0;
  if (!take_guard(replace != 0)) return 0;
  register_timer();
  device_count = count;
  set_hooks(count > 0);
  return 1;
}
// Registers the guard with no GPU yet (torch.cuda still says there is none), so that the autograd
// engine, if it starts now, makes room for a machine switched on later.
int gpulab_prepare(int replace) { return take_guard(replace != 0) ? 1 : 0; }
// Whether PyTorch's CUDA hooks answer for the simulated machine.
int gpulab_hooks_active() { return at::detail::getCUDAHooks().hasCUDA() ? 1 : 0; }
int gpulab_get_device() { return current_index; }
void gpulab_set_device(int index) { current_index = static_cast<c10::DeviceIndex>(index); }
}

extern "C" {
// Switches the simulated Apple GPU on (1) or off (0); `pinned_on_mps`: pinned memory's DataPtr names mps:0.
// 0 where this torch has an MPS guard of its own (a macOS build).
int gpulab_install_mps(int on, int pinned_on_mps) {
  if (!take_mps_guard()) return 0;
  mps_pinned_device = pinned_on_mps;
  mps_count = on ? 1 : 0;
  set_mps_hooks(on != 0);
  return 1;
}
int gpulab_mps_hooks_active() { return at::detail::getMPSHooks().hasMPS() ? 1 : 0; }
}
