#include "sluice/policy/yaml_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sluice::policy {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(LoadYamlDocuments, ReadsEveryDocumentInOrder) {
  const StatusOr<std::vector<YAML::Node>> documents = load_yaml_documents("a: 1\n---\nb: 2\n");
  ASSERT_TRUE(documents.ok()) << documents.status().message();
  ASSERT_EQ(documents->size(), 2u);
  EXPECT_EQ((*documents)[0]["a"].as<int>(), 1);
  EXPECT_EQ((*documents)[1]["b"].as<int>(), 2);
  const StatusOr<std::vector<YAML::Node>> none = load_yaml_documents("");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// yaml-cpp 0.7 reports empty documents forever after these, and LoadAll grows without bound
// (found by fuzzing policy documents: a comment line, then `{"":[{}]},`).
TEST(LoadYamlDocuments, AFlowCollectionFollowedByACommaIsAnErrorNotAnEndlessLoop) {
  for (const char* text : {"# policies\n{\"\":[{}]},", "---\n{},", "---\n[a, b],\nc"}) {
    const StatusOr<std::vector<YAML::Node>> documents = load_yaml_documents(text);
    ASSERT_FALSE(documents.ok()) << text;
    EXPECT_EQ(documents.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(documents.status().message(), StartsWith("not valid YAML: "));
    EXPECT_THAT(documents.status().message(), HasSubstr("line "));
  }
}

TEST(LoadYamlDocuments, SyntaxErrorsAndBytesThatAreNotUtf8AreErrors) {
  EXPECT_THAT(load_yaml_documents("a: [unclosed").status().message(),
              StartsWith("not valid YAML: "));
  EXPECT_EQ(load_yaml_documents("a: caf\xe9\n").status().message(),
            "not valid YAML: the text is not UTF-8");
}

}  // namespace
}  // namespace sluice::policy
