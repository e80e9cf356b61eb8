// CPU<->CUDA parity of training: the fused optimizer steps (SGD with momentum / nesterov /
// weight decay, Adam with and without amsgrad, AdamW) on parameters of each device, the one-launch
// multi-tensor step over many parameters (with its on-device step counters and a state dict
// moved from the GPU optimizer to a CPU one), and the
// whole-model test: the tiny GPT trained 20 steps with AdamW on both devices from the same seed,
// loss curves compared step by step. All [cuda]: skipped where no GPU is present.
#include <functional>
#include <memory>

#include "cuda/parity.h"

using namespace tt;
using namespace tt::testing;

namespace {

// A few steps of `make(params)` on a parameter of each device, from the same values and with the
// same gradients (a loss of fixed coefficients); the parameters and optimizer states compared.
void check_optimizer(const std::string& what, ScalarType dt,
                     const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make) {
  INFO(what << " " << dtype_name(dt));
  Tensor init = rnd({33, 129}, dt).detach(), coef = rnd({33, 129}, dt).detach();
  Tensor pc = init.clone().requires_grad_(), pd = init.to(gpu(), true).requires_grad_();
  Tensor coef_d = coef.to(gpu(), true);
  auto oc = make({pc}), od = make({pd});
  for (int step = 0; step < 5; ++step) {
    oc->zero_grad();
    od->zero_grad();
    ((pc * coef).sum() + (pc * pc).sum() * 0.5).backward();
    ((pd * coef_d).sum() + (pd * pd).sum() * 0.5).backward();
    oc->step();
    od->step();
    INFO("step " << step);
    check_same("parameter", pd, pc, dt == kFloat64 ? Tolerance{1e-10, 1e-12} : Tolerance{1e-5, 1e-6});
  }
  CHECK(pd.device() == gpu());
}

}  // namespace

TEST_CASE("parity: SGD, Adam and AdamW steps", "[cuda][parity][optim]") {
  TT_REQUIRE_CUDA();
  using P = std::vector<Tensor>;
  using O = std::unique_ptr<optim::Optimizer>;
  for (ScalarType dt : {kFloat32, kFloat64}) {
    check_optimizer("SGD plain", dt, [](P p) -> O { return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.1)); });
    check_optimizer("SGD momentum, dampening, weight decay", dt, [](P p) -> O {
      return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.05).momentum(0.9).dampening(0.1).weight_decay(1e-2));
    });
    check_optimizer("SGD nesterov, maximize", dt, [](P p) -> O {
      return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.05).momentum(0.9).nesterov(true).maximize(true));
    });
    check_optimizer("Adam", dt, [](P p) -> O { return std::make_unique<optim::Adam>(p, optim::AdamOptions(1e-2)); });
    check_optimizer("Adam amsgrad, weight decay", dt, [](P p) -> O {
      return std::make_unique<optim::Adam>(p, optim::AdamOptions(1e-2).amsgrad(true).weight_decay(1e-2));
    });
    check_optimizer("AdamW", dt, [](P p) -> O {
      return std::make_unique<optim::AdamW>(p, optim::AdamWOptions(1e-2).betas({0.9, 0.95}).weight_decay(0.1));
    });
  }
}

namespace {

// `make` over 200 parameters of each device (sizes 0 to 70000: a GPU launch's table holds fewer, so
// two launches, and the large ones span several blocks), 4 steps with fixed gradients; parameters
// and Adam's on-device step counters compared. Then the GPU optimizer's state dict loaded into a
// CPU optimizer: one more step on each agrees (the counts travel as tensors).
void check_many(const std::string& what,
                const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make) {
  INFO(what);
  std::vector<Tensor> pc, pd, gc, gd;
  for (int i = 0; i < 200; ++i) {
    const int64_t n = i == 0 ? 0 : (i % 50 == 7 ? 70000 : (i * 37) % 1000 + 1);
    Tensor init = rnd({n}).detach(), g = rnd({n}).detach();
    pc.push_back(init.clone().requires_grad_());
    pd.push_back(init.to(gpu(), true).requires_grad_());
    gc.push_back(g);
    gd.push_back(g.to(gpu(), true));
  }
  auto oc = make(pc), od = make(pd);
  for (int step = 0; step < 4; ++step) {
    for (size_t i = 0; i < pc.size(); ++i) {
      pc[i].set_grad(gc[i] * double(step + 1));
      pd[i].set_grad(gd[i] * double(step + 1));
    }
    oc->step();
    od->step();
  }
  for (size_t i = 0; i < pc.size(); ++i) {
    INFO("parameter " << i);
    check_same("parameter", pd[i], pc[i], Tolerance{1e-5, 1e-6});
    const nn::StateDict& st = od->state(pd[i]);
    if (const Tensor* count = st.find("step")) {
      CHECK(count->device() == gpu());  // never moved to the host by a step
      CHECK(count->item<int64_t>() == 4);
    }
  }
  auto loaded = make(pc);
  loaded->load_state_dict(od->state_dict());
  for (size_t i = 0; i < pc.size(); ++i) {
    pc[i].set_grad(gc[i]);
    pd[i].set_grad(gd[i]);
  }
  // The CPU parameters take the GPU's values, then both optimizers step once more.
  {
    NoGradGuard no_grad;
    for (size_t i = 0; i < pc.size(); ++i) pc[i].copy_(pd[i].cpu());
  }
  loaded->step();
  od->step();
  for (size_t i = 0; i < pc.size(); ++i) check_same("parameter after reload", pd[i], pc[i], Tolerance{1e-5, 1e-6});
}

}  // namespace

TEST_CASE("parity: one-launch optimizer steps over many parameters", "[cuda][parity][optim]") {
  TT_REQUIRE_CUDA();
  using P = std::vector<Tensor>;
  using O = std::unique_ptr<optim::Optimizer>;
  check_many("SGD nesterov, weight decay", [](P p) -> O {
    return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-2));
  });
  check_many("Adam amsgrad, maximize", [](P p) -> O {
    return std::make_unique<optim::Adam>(p, optim::AdamOptions(1e-2).amsgrad(true).maximize(true));
  });
  check_many("AdamW", [](P p) -> O {
    return std::make_unique<optim::AdamW>(p, optim::AdamWOptions(1e-3).betas({0.9, 0.95}).weight_decay(0.1));
  });
}

namespace {

// The tiny GPT of examples/train_gpt_task, smaller: 2 layers, 4 heads, embedding 64.
nn::GPT make_gpt() {
  manual_seed(2024);
  return nn::GPT(nn::GPTOptions(17, 32).n_layer(2).n_embd(64).n_head(4));
}

// Loss of each of `steps` AdamW steps on batches drawn from a fixed generator (CPU ids copied).
std::vector<double> train_curve(nn::GPT& gpt, const Device& device, int steps) {
  optim::AdamW opt(gpt.parameters(), optim::AdamWOptions(3e-3).weight_decay(1e-2));
  Generator data(77);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    Tensor ids = randint(0, 17, {8, 33}, kInt64, &data);
    Tensor input = ids.slice(1, 0, 32).to(device), target = ids.slice(1, 1, 33).to(device);
    opt.zero_grad();
    Tensor logits = gpt(input);
    Tensor loss = F::cross_entropy(logits.reshape({-1, 17}), target.reshape({-1}));
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

}  // namespace

TEST_CASE("parity: the tiny GPT trains the same 20 steps on both devices", "[cuda][parity][model]") {
  TT_REQUIRE_CUDA();
  nn::GPT cpu = make_gpt();
  nn::GPT dev = make_gpt();
  dev.to(gpu());  // the same initial values, copied
  for (const auto& [name, p] : dev.named_parameters()) {
    INFO(name);
    CHECK(p.device() == gpu());
  }
  std::vector<double> lc = train_curve(cpu, Device(kCPU), 20);
  std::vector<double> ld = train_curve(dev, gpu(), 20);
  REQUIRE(lc.size() == ld.size());
  for (size_t i = 0; i < lc.size(); ++i) {
    INFO("step " << i << ": cpu " << lc[i] << ", cuda " << ld[i]);
    CHECK(std::fabs(lc[i] - ld[i]) <= 1e-4 * std::fabs(lc[i]) + 1e-6);
  }
  CHECK(lc.back() < lc.front());  // it learns something
  // The parameters after 20 steps agree too, loosely: Adam divides by sqrt(v), so a gradient
  // element near zero that rounds differently moves its parameter by up to lr either way.
  auto pc = cpu.named_parameters();
  for (const auto& [name, p] : dev.named_parameters()) {
    INFO(name);
    check_same("parameter after training", p, pc[name], Tolerance{1e-2, 1e-2});
  }
}
