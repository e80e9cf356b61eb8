// The examples' shared pieces, tested where a test can reach them: --device resolution
// (examples::Cli::device), the running loss kept as a tensor, the progress bar's lazy metrics, and
// the gradient clipping that stays on the device (against tt::nn::utils::clip_grad_norm_).
// The exits (--device cuda refused with status 2) are command-line tests in CMakeLists.txt.
#include "test_util.h"

#include "cli.h"
#include "progress.h"
#include "train_loop.h"

using namespace tt;

TEST_CASE("examples: --device cpu and auto resolve, auto to the GPU exactly when one is usable", "[examples]") {
  examples::Cli cli("test", "");
  CHECK(cli.device("cpu") == Device(kCPU));
  const Device automatic = cli.device("auto");
  CHECK(automatic.is_cuda() == cuda::is_available());
  if (automatic.is_cuda()) {
    CHECK(cli.device("cuda") == Device(kCUDA, 0));
    CHECK(cli.device("auto", 1) == Device(kCUDA, 1));  // a data-parallel rank's local GPU
  }
  CHECK(examples::device_label(Device(kCPU)) == "cpu");
}

TEST_CASE("examples: the running loss is the same kept as a tensor or as a double", "[examples]") {
  examples::RunningLoss on_host, as_tensor;
  for (double loss : {2.5, 2.25, 1.75, 1.5, 1.0}) {
    on_host.add(loss);
    as_tensor.add(scalar_tensor(loss, kFloat32));
  }
  CHECK(as_tensor.value() == Approx(on_host.value()).epsilon(1e-6));
}

TEST_CASE("examples: the progress bar reads lazy metrics only when it draws", "[examples]") {
  // Not a terminal here (ctest captures stdout): step() never draws, so the metrics are never read.
  examples::ProgressBar bar("test", 3);
  int reads = 0;
  for (int i = 0; i < 3; ++i) bar.step(1, [&] {
    ++reads;
    return examples::ProgressBar::Metrics{{"loss", 1.0}};
  });
  if (isatty(fileno(stdout)) == 0) CHECK(reads == 0);
}

TEST_CASE("examples: clipping on the device matches clip_grad_norm_", "[examples]") {
  for (double max_norm : {0.5, 1e3}) {  // clipped, and left alone (exactly)
    INFO("max_norm " << max_norm);
    manual_seed(3);
    nn::Linear a(5, 4), b(5, 4);
    b.weight.detach().copy_(a.weight.detach());
    b.bias.detach().copy_(a.bias.detach());
    Tensor x = randn({6, 5});
    (a(x) * a(x)).sum().backward();
    (b(x) * b(x)).sum().backward();
    const double want = nn::utils::clip_grad_norm_(a.parameters(), max_norm);
    const Tensor got = examples::clip_grad_norm_on_device(b.parameters(), max_norm);
    REQUIRE(got.defined());
    CHECK(got.item<double>() == Approx(want).epsilon(1e-6));
    CHECK_ALLCLOSE(b.weight.grad(), a.weight.grad(), 1e-6, 1e-7);
    CHECK_ALLCLOSE(b.bias.grad(), a.bias.grad(), 1e-6, 1e-7);
    if (max_norm > want) CHECK(testing::allclose(b.weight.grad(), a.weight.grad(), 0, 0));
  }
  nn::Linear none(2, 2);  // no gradient yet: nothing to clip
  CHECK_FALSE(examples::clip_grad_norm_on_device(none.parameters(), 1.0).defined());
}
