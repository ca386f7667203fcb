"""The source's own listings, verbatim, to run as printed: source 000 App. 14.3.6 (pseudocode)
and App. 14.3.7 (``GatedAttention``); source 002 §7-8 (three functions returning dicts)."""

# ruff: noqa: E501, W291, W293

GATED_ATTENTION_14_3_7 = r'''
class GatedAttention(nn.Module):
    """
    门控注意力机制
    
    门控值 g 控制信息通过率，实现信息流的自适应调节
    """
    
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        
        # Q, K, V 投影
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        
        # 门控网络：从 Q, K, V 的拼接中学习门控值
        self.gate_network = nn.Sequential(
            nn.Linear(d_model * 3, d_model),
            nn.GELU(),
            nn.Linear(d_model, num_heads),
            nn.Sigmoid()
        )
        
    def forward(self, x, mask=None):
        batch_size, seq_len, d_model = x.shape
        
        # 线性投影：生成 Q, K, V
        q = self.w_q(x).view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.w_k(x).view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.w_v(x).view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
        
        # 计算门控值：从特征中学习信息过滤
        concat_features = torch.cat([q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)], dim=-1)
        gate = self.gate_network(concat_features.view(batch_size, seq_len, -1))
        gate = gate.unsqueeze(2).unsqueeze(4)  # [B, H, 1, 1, 1]
        
        # 注意力计算
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attn_weights = F.softmax(scores, dim=-1)
        
        # 应用门控：调节信息流量
        attn_weights = attn_weights * gate
        
        # 加权聚合：输出是值的加权平均
        output = torch.matmul(attn_weights, v)
        output = output.transpose(1, 2).contiguous().view(batch_size, seq_len, d_model)
        
        return self.w_o(output)
'''

LEARNABLE_SPARSE_14_3_6 = r"""
输入: 初始稀疏度 p, 温度 T, 总迭代 T_iter
输出: 学习的稀疏模式

initialize learnable mask M_learnable ~ Bernoulli(p)

for t = 1 to T_iter do:
    # Gumbel-Softmax 采样：从离散分布中采样
    mask = gumbel_softmax(M_learnable, temperature=T * (1 - t/T_iter))
    
    # 计算稀疏注意力
    alpha_sparse = softmax(mask * S)
    
    # 计算损失：任务损失加稀疏性惩罚
    L = task_loss + λ_sparse * sparsity_penalty(mask)
    
    # 更新掩码参数
    M_learnable = M_learnable - η ∇_M L
end for

return mask > 0.5
"""

SOURCE_002_BIDIRECTIONAL_ADVANTAGES = r'''
def bidirectional_advantages():
    """
    双向注意力的优势
    """
    advantages = {
        "全局上下文": {
            "描述": "每个位置都能访问完整的上下文信息",
            "应用": "命名实体识别、词性标注、句法分析",
            "效果": "显著提升对歧义的处理能力"
        },
        "并行计算": {
            "描述": "所有位置可以同时计算，无需序列依赖",
            "应用": "高效的批量处理和并行训练",
            "效果": "训练速度比RNN快数十倍"
        },
        "长距离建模": {
            "描述": "直接建模任意距离的依赖关系",
            "应用": "长文档理解、复杂句法分析",
            "效果": "避免了序列模型的长距离依赖衰减问题"
        },
        "表示丰富性": {
            "描述": "多头机制捕获多种类型的关系",
            "应用": "多任务学习、迁移学习",
            "效果": "学到的表示具有良好的泛化能力"
        }
    }
    return advantages
'''

SOURCE_002_BIDIRECTIONAL_CHALLENGES = r'''
def bidirectional_challenges():
    """
    双向注意力的挑战
    """
    challenges = {
        "计算复杂度": {
            "问题": "O(n²)的计算和存储复杂度",
            "影响": "长序列处理困难",
            "解决方案": "稀疏注意力、线性注意力、局部窗口"
        },
        "位置编码依赖": {
            "问题": "需要显式的位置信息编码",
            "影响": "对位置敏感任务的处理",
            "解决方案": "改进的位置编码方案"
        },
        "注意力分散": {
            "问题": "注意力可能过于分散，缺乏焦点",
            "影响": "关键信息的权重可能被稀释",
            "解决方案": "注意力正则化、结构化注意力"
        },
        "可解释性": {
            "问题": "复杂的多头注意力模式难以解释",
            "影响": "模型决策的可解释性不足",
            "解决方案": "注意力可视化、注意力分析工具"
        }
    }
    return challenges
'''

SOURCE_002_COMPARE_ATTENTION_TYPES = r'''
def compare_attention_types():
    """
    对比不同类型注意力的信息流特征
    """
    comparison = {
        "双向自注意力(编码器)": {
            "信息流方向": "全方向",
            "可见范围": "整个序列",
            "计算复杂度": "O(n²)",
            "应用场景": "理解任务、特征提取"
        },
        "掩码自注意力(解码器)": {
            "信息流方向": "仅前向",
            "可见范围": "当前位置之前",
            "计算复杂度": "O(n²)",
            "应用场景": "生成任务、语言建模"
        },
        "交叉注意力(编码器-解码器)": {
            "信息流方向": "编码器→解码器",
            "可见范围": "编码器全序列",
            "计算复杂度": "O(n×m)",
            "应用场景": "序列到序列任务"
        },
        "稀疏注意力": {
            "信息流方向": "受限的全方向",
            "可见范围": "部分序列",
            "计算复杂度": "O(n×√n) 或 O(n×log n)",
            "应用场景": "长序列处理"
        }
    }
    return comparison
'''
