#include "sluice/policy/yaml_text.h"

#include <yaml-cpp/eventhandler.h>

#include <cstddef>
#include <sstream>
#include <string>

#include "sluice/core/utf8.h"

namespace sluice::policy {
namespace {

// Counts the documents yaml-cpp's parser reports; throws once there are more than the text can
// hold (each document takes at least one byte), which only a parser that stopped advancing
// reaches.
class DocumentCounter : public YAML::EventHandler {
 public:
  explicit DocumentCounter(std::size_t most) : most_(most) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > most_) {
      throw YAML::ParserException(mark, "unexpected text after a flow collection (a stray ','?)");
    }
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  std::size_t most_;
  std::size_t documents_ = 0;
};

}  // namespace

StatusOr<std::vector<YAML::Node>> load_yaml_documents(std::string_view text) {
  if (!is_valid_utf8(text)) return invalid_argument("not valid YAML: the text is not UTF-8");
  const std::string owned(text);
  try {
    // A first pass that builds nothing, so the loop above is caught before LoadAll allocates.
    std::istringstream input(owned);
    YAML::Parser parser(input);
    DocumentCounter counter(owned.size() + 1);
    while (parser.HandleNextDocument(counter)) {
    }
    return YAML::LoadAll(owned);
  } catch (const YAML::Exception& error) {
    return invalid_argument(std::string("not valid YAML: ") + error.what());
  }
}

}  // namespace sluice::policy
