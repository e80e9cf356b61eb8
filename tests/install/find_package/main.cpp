// The README's library example: a LibTorch-style training program against the installed
// package. A two-layer network learns y = sin(x) on [-3, 3] with Adam; the trained weights go
// through a safetensors checkpoint into a fresh network, which must compute the same outputs.
// Last, one step through DistributedDataParallel on a world of one: it links tt::distributed,
// and with it the MPI (and NCCL) libraries the package names as its dependencies. Then CUDA, which
// the package opens at run time: a GEMM where a GPU is, a clear error where none is.
#include <tinytorch/tinytorch.h>

#include <cstdio>
#include <iostream>

struct Net : tt::nn::Module {
  Net() {
    fc1 = register_module("fc1", std::make_shared<tt::nn::Linear>(1, 32));
    fc2 = register_module("fc2", std::make_shared<tt::nn::Linear>(32, 1));
  }
  tt::Tensor forward(const tt::Tensor& x) { return fc2->forward(tt::tanh(fc1->forward(x))); }
  std::shared_ptr<tt::nn::Linear> fc1, fc2;
};

int main() {
  tt::manual_seed(0);
  tt::Tensor x = tt::linspace(-3, 3, 256).unsqueeze(1);  // inputs: [256, 1]
  tt::Tensor y = tt::sin(x);                             // targets: [256, 1]

  auto net = std::make_shared<Net>();
  tt::optim::Adam optimizer(net->parameters(), tt::optim::AdamOptions(0.01));
  for (int step = 0; step < 1000; ++step) {
    tt::Tensor loss = tt::F::mse_loss(net->forward(x), y);
    optimizer.zero_grad();
    loss.backward();  // fills every parameter's grad()
    optimizer.step();
  }
  std::cout << *net << "\n";

  tt::save(*net, "net.safetensors");  // written to a temporary file, then renamed
  auto restored = std::make_shared<Net>();
  tt::load(*restored, "net.safetensors");
  tt::NoGradGuard no_grad;
  double loss = tt::F::mse_loss(restored->forward(x), y).item<double>();
  std::printf("loss after reload: %.2e\n", loss);

  tt::nn::DistributedDataParallel<Net> ddp(
      restored, tt::nn::DistributedDataParallelOptions().process_group(tt::distributed::world_of_one()));
  {
    tt::AutoGradMode grad(true);
    tt::F::mse_loss(ddp.forward(x), y).backward();  // buckets, hooks, the end-of-backward callback
  }
  const bool averaged = restored->fc1->weight.grad().defined() && ddp.reducer()->last_backward().buckets == 1;
  std::printf("world size %d, gradients through DistributedDataParallel: %s\n", tt::distributed::get_world_size(),
              averaged ? "yes" : "no");

  // Asking for CUDA: with a GPU (and a CUDA-enabled package), a GEMM through cuBLAS, which the
  // package opens on first use from the folder it was built against; without one, a clear tt::Error.
  bool cuda_ok = false;
  if (tt::cuda::is_available()) {
    const tt::Tensor a = tt::randn({64, 32}), b = tt::randn({32, 16});
    const tt::Tensor on_gpu = a.cuda().matmul(b.cuda()).cpu();
    cuda_ok = (on_gpu - a.matmul(b)).abs().max().item<double>() < 1e-3;
    std::printf("a GEMM on %s: %s\n", tt::cuda::device_description(0).c_str(), cuda_ok ? "matches the CPU" : "WRONG");
  } else {
    try {
      (void)tt::ones({2}).cuda();
    } catch (const tt::Error& e) {
      cuda_ok = true;
      std::printf("no GPU here: %s\n", e.what());
    }
  }
  return loss < 1e-3 && averaged && cuda_ok ? 0 : 1;
}
